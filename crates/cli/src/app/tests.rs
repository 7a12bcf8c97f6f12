//! Boot: derived row configs, credential checks, and a whole composition mounted in-process.

use super::*;
use crate::config::{load, Overrides, SETTINGS_FILE};
use dsh_kernel::Plugin;
use serde_json::json;
use std::collections::BTreeMap;

struct Home {
    dir: tempfile::TempDir,
    env: BTreeMap<String, String>,
}

fn home(settings: Option<&str>, vars: &[(&str, &str)]) -> Home {
    let dir = tempfile::tempdir().unwrap();
    if let Some(text) = settings {
        std::fs::write(dir.path().join(SETTINGS_FILE), text).unwrap();
    }
    let mut env: BTreeMap<String, String> = vars
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    env.insert("DSH_HOME".into(), dir.path().display().to_string());
    Home { dir, env }
}

fn os_env(env: &BTreeMap<String, String>) -> BTreeMap<std::ffi::OsString, std::ffi::OsString> {
    env.iter().map(|(k, v)| (k.into(), v.into())).collect()
}

fn settings_of(home: &Home, flags: &Overrides) -> Settings {
    load(&home.env, flags).unwrap()
}

fn row<'a>(composition: &'a dsh_kernel::Composition, id: &str) -> &'a serde_json::Value {
    &composition.rows.iter().find(|r| r.id == id).unwrap().config
}

#[test]
fn routes_carry_the_effective_base_url_and_key_rules() {
    let home = home(
        Some(
            "[providers.local]\nbase_url = \"http://127.0.0.1:9/v1\"\napi_key_env = \"LOCAL_KEY\"\n\
             models = [{ id = \"coder\", context_window = 8192, input = [\"text\", \"image\"] }]\n",
        ),
        &[("DEEPSEEK_BASE_URL", "http://127.0.0.1:7")],
    );
    let flags = Overrides {
        base_url: Some("http://127.0.0.1:8/v1".into()),
        provider: Some("openai-compatible".into()),
        ..Overrides::default()
    };
    let config = serde_json::to_value(openai_config(&settings_of(&home, &flags))).unwrap();
    let summary: Vec<_> = config["routes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            json!([
                r["route"],
                r["baseUrl"],
                r["apiKeyEnv"],
                r["apiKeyRequired"],
                r.get("baseUrlEnv")
            ])
        })
        .collect();
    assert_eq!(
        summary,
        [
            json!([
                "deepseek-official",
                "http://127.0.0.1:7",
                "DEEPSEEK_API_KEY",
                true,
                null
            ]),
            json!([
                "openai-compatible",
                "http://127.0.0.1:8/v1",
                "OPENAI_API_KEY",
                false,
                null
            ]),
            json!(["local", "http://127.0.0.1:9/v1", "LOCAL_KEY", true, null]),
        ]
    );
    assert_eq!(
        config["routes"][2]["catalog"]["models"],
        json!([{"id": "coder", "contextWindow": 8192, "input": ["text", "image"]}])
    );
    assert_eq!(
        config["routes"][0]["compat"],
        json!({"maxTokensField": "max_tokens", "sendThinking": true, "reasoningReplay": "always"})
    );
}

#[test]
fn routes_carry_their_stream_limits() {
    let home = home(
        Some(
            "[providers.openai-compatible]
max_sse_line_bytes = 4096
max_response_bytes = 65536
",
        ),
        &[],
    );
    let config =
        serde_json::to_value(openai_config(&settings_of(&home, &Overrides::default()))).unwrap();
    let limits: Vec<_> = config["routes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| json!([r["route"], r["maxSseLineBytes"], r["maxResponseBytes"]]))
        .collect();
    assert_eq!(
        limits,
        [
            json!(["deepseek-official", 16 * 1024 * 1024, 128 * 1024 * 1024]),
            json!(["openai-compatible", 4096, 65536]),
        ]
    );
}

#[test]
fn a_missing_key_names_its_variable_and_a_way_out() {
    let deepseek = home(None, &[]);
    let error = check_credentials(&settings_of(&deepseek, &Overrides::default())).unwrap_err();
    assert_eq!(
        error.to_string(),
        "DEEPSEEK_API_KEY is not set: export it, or use --base-url with --provider \
         openai-compatible for a local server"
    );
    assert_eq!(error.code(), "MISSING_CREDENTIAL");
    assert!(error.is_usage());

    let local = Overrides {
        provider: Some("openai-compatible".into()),
        ..Overrides::default()
    };
    assert!(check_credentials(&settings_of(&deepseek, &local)).is_ok());

    let custom = home(
        Some("[model]\nprovider = \"lab\"\n[providers.lab]\nbase_url = \"https://lab.example/v1\"\napi_key_env = \"LAB_KEY\"\n"),
        &[],
    );
    let error = check_credentials(&settings_of(&custom, &Overrides::default())).unwrap_err();
    assert_eq!(
        error.to_string(),
        "LAB_KEY is not set: export it (provider route `lab` reads its API key from it)"
    );
    let with_key = home(None, &[("DEEPSEEK_API_KEY", "k")]);
    assert!(check_credentials(&settings_of(&with_key, &Overrides::default())).is_ok());
}

#[test]
fn derived_rows_follow_the_settings_unless_a_patch_sets_their_config() {
    let settings = "[tools.bash]\nenabled = false\n[tools.web_fetch]\nenabled = true\n\
                    [approval]\npolicy = \"untrusted\"\nrules = [{ action = \"allow\", tool = \"bash\", command_prefix = \"cargo test\" }, { action = \"deny\", tool = \"write\", path = \"secrets/**\" }]\n\
                    [[plugins]]\nid = \"session-persistence-jsonl\"\nconfig = { root = \"/elsewhere\", compression = \"none\" }\n";
    let patched = home(Some(settings), &[]);
    let settings = settings_of(&patched, &Overrides::default());
    let composition = boot_composition(&settings);
    assert_eq!(
        row(&composition, "tools-builtin"),
        &json!({
            "enabled": {"bash": false, "read": true, "write": true, "edit": true, "glob": true,
                        "grep": true, "todo_write": true, "web_fetch": true},
            "web_fetch": {"enabled": true, "allow_private_addresses": false},
        })
    );
    assert_eq!(
        row(&composition, "approval"),
        &json!({"policy": "untrusted", "rules": [
            {"action": "allow", "tool": "bash", "command_prefix": "cargo test"},
            {"action": "deny", "tool": "write", "path": "secrets/**"},
        ]})
    );
    assert_eq!(
        row(&composition, "session-persistence-jsonl"),
        &json!({"root": "/elsewhere", "compression": "none"})
    );
    // Each derived config is one its plugin accepts.
    let tools: dsh_tools_builtin::BuiltinToolsConfig =
        serde_json::from_value(row(&composition, "tools-builtin").clone()).unwrap();
    assert_eq!(tools.tool_names().unwrap().len(), 7);
    let approval: dsh_tools_builtin::ApprovalSettings =
        serde_json::from_value(row(&composition, "approval").clone()).unwrap();
    assert_eq!(approval.rules.len(), 2);
    match open_store(&settings).unwrap() {
        OpenedStore::Files(files) => {
            assert_eq!(files.layout().root(), std::path::Path::new("/elsewhere"))
        }
        other => panic!("expected the file store, got {other:?}"),
    }

    let plain = home(None, &[]);
    let plain_settings = settings_of(&plain, &Overrides::default());
    assert_eq!(
        row(
            &boot_composition(&plain_settings),
            "session-persistence-jsonl"
        ),
        &json!({"root": plain.dir.path().join("sessions")})
    );
}

#[test]
fn the_compaction_row_is_derived_from_the_compaction_section() {
    // A null-config row gets the section's config; a patched config is left as written.
    let derived = home(
        Some("[compaction]\nretain_tokens = 3000\nretries = 2\n"),
        &[],
    );
    let composition = boot_composition(&settings_of(&derived, &Overrides::default()));
    assert_eq!(
        row(&composition, config::COMPACTION_ROW),
        &json!({"auto": true, "thresholdRatio": 0.8, "retainTokens": 3000,
                "maxTokens": 8192, "retries": 2, "overflowRetries": 1})
    );
    let config: dsh_compaction::CompactionConfig =
        serde_json::from_value(row(&composition, config::COMPACTION_ROW).clone()).unwrap();
    config.validate().unwrap();
    let patched = home(
        Some(
            "[compaction]\nretries = 2\n\
             [[plugins]]\nid = \"compaction\"\nconfig = { auto = false }\n",
        ),
        &[],
    );
    let composition = boot_composition(&settings_of(&patched, &Overrides::default()));
    assert_eq!(
        row(&composition, config::COMPACTION_ROW),
        &json!({"auto": false})
    );
}

#[tokio::test]
async fn boot_mounts_every_row_and_creates_an_agent_with_its_tool_env() {
    let home = home(None, &[("DEEPSEEK_API_KEY", "sk-test")]);
    let settings = settings_of(&home, &Overrides::default());
    let workspace = tempfile::tempdir().unwrap();
    let runtime = Runtime::boot(
        settings,
        BootOptions {
            cwd: workspace.path().to_path_buf(),
            env: os_env(&home.env),
        },
    )
    .unwrap();
    assert_eq!(
        runtime.workspace(),
        workspace.path().canonicalize().unwrap()
    );
    assert!(runtime.approvals().is_some());
    assert!(runtime.persistence().is_some());
    let handle = runtime.create_agent(AgentStart::default()).await.unwrap();
    let agent = handle.agent().clone();
    assert!(agent.id().as_str().starts_with("session-"));
    // The agent's scope sees every default built-in tool and the skills row's `skill`, and its session's environment.
    let tools = runtime.ctx().get::<dsh_tools::ToolRuntime>().unwrap();
    let names = tools.names(Some(agent.scope_key()));
    assert_eq!(
        names,
        [
            "bash",
            "read",
            "write",
            "edit",
            "glob",
            "grep",
            "todo_write",
            "job_output",
            "job_list",
            "job_kill",
            "ask_user_question",
            "exit_plan_mode",
            "skill",
            "session_search",
            "session_event_search",
            "session_trace",
            "session_event_trace",
            "session_event_read",
            "remember",
            "get_goal",
            "create_goal",
            "update_goal",
            "subagent",
            "subagent_fork",
            "send_message",
            "interrupt_agent",
            "list_agents"
        ]
    );
    // A new session starts with its safety records.
    let types: Vec<String> = agent
        .session()
        .events()
        .iter()
        .map(|e| e.type_name().to_owned())
        .collect();
    assert_eq!(
        types,
        ["permission/preset", "sandbox/mode", "approval/policy"]
    );
    let env = runtime.tool_env(agent.as_ref()).unwrap();
    assert_eq!(env.workspace(), runtime.workspace());
    assert_eq!(env.sandbox().mode(), SandboxMode::WorkspaceWrite);
    assert_eq!(env.facts().session_id.as_deref(), Some(agent.id().as_str()));
    handle.dispose().await;
    // The registration unwound with the agent.
    assert!(runtime.tool_env(agent.as_ref()).is_none());
    runtime.shutdown();
}

#[tokio::test]
async fn a_resumed_agent_runs_its_tools_in_the_recorded_mode_and_switches_live() {
    let home = home(None, &[("DEEPSEEK_API_KEY", "sk-test")]);
    let settings = settings_of(&home, &Overrides::default());
    let workspace = tempfile::tempdir().unwrap();
    let runtime = Runtime::boot(
        settings,
        BootOptions {
            cwd: workspace.path().to_path_buf(),
            env: os_env(&home.env),
        },
    )
    .unwrap();
    let mode = |agent: &Arc<dyn Agent>| runtime.tool_env(agent.as_ref()).unwrap().sandbox().mode();
    let first = runtime.create_agent(AgentStart::default()).await.unwrap();
    let id = first.agent().id().clone();
    dsh_tools_builtin::approval::events::log_sandbox_mode(
        first.agent().session(),
        SandboxMode::ReadOnly,
    )
    .unwrap();
    first.dispose().await;

    let resumed = runtime
        .resume_agent(id, AgentStart::default())
        .await
        .unwrap();
    let agent = resumed.agent().clone();
    assert_eq!(mode(&agent), SandboxMode::ReadOnly);
    // A switch takes effect on the live agent.
    runtime
        .set_sandbox_mode(agent.as_ref(), SandboxMode::DangerFullAccess)
        .unwrap();
    assert_eq!(mode(&agent), SandboxMode::DangerFullAccess);
    resumed.dispose().await;
    assert!(runtime.tool_env(agent.as_ref()).is_none());
    runtime.shutdown();
}

#[tokio::test]
async fn the_environment_is_read_as_os_strings_and_only_used_text_must_be_utf8() {
    use std::os::unix::ffi::OsStringExt;
    let home = home(None, &[("DEEPSEEK_API_KEY", "sk-test")]);
    let settings = settings_of(&home, &Overrides::default());
    let workspace = tempfile::tempdir().unwrap();
    let raw = std::ffi::OsString::from_vec(b"/tmp/caf\xe9".to_vec());
    // A variable dsh does not read (OLDPWD after visiting such a directory) is fine.
    let mut env = os_env(&home.env);
    env.insert("OLDPWD".into(), raw.clone());
    let runtime = Runtime::boot(
        settings.clone(),
        BootOptions {
            cwd: workspace.path().to_path_buf(),
            env: env.clone(),
        },
    )
    .unwrap();
    runtime.shutdown();
    // The API key of the active route is read as text: refused, naming the variable.
    env.insert("DEEPSEEK_API_KEY".into(), raw);
    let error = Runtime::boot(
        settings,
        BootOptions {
            cwd: workspace.path().to_path_buf(),
            env,
        },
    )
    .unwrap_err();
    assert_eq!(error.code(), "ENV_NOT_UNICODE");
    assert!(error.is_usage());
    assert_eq!(
        error.to_string(),
        "environment variable DEEPSEEK_API_KEY is not valid UTF-8 (it holds the API key of \
         provider route `deepseek-official`); set it to UTF-8 text"
    );
}

#[tokio::test]
async fn boot_refuses_a_disabled_agent_loop_and_an_unusable_workspace() {
    let home = home(
        Some("[[plugins]]\nid = \"agent-loop\"\ndisabled = true\n"),
        &[("DEEPSEEK_API_KEY", "sk-test")],
    );
    let settings = settings_of(&home, &Overrides::default());
    let workspace = tempfile::tempdir().unwrap();
    let options = BootOptions {
        cwd: workspace.path().to_path_buf(),
        env: os_env(&home.env),
    };
    let error = Runtime::boot(settings.clone(), options).unwrap_err();
    assert_eq!(
        error.to_string(),
        "the composition provides no agent loop; is the `agent-loop` row disabled in settings.toml?"
    );
    let missing = BootOptions {
        cwd: workspace.path().join("nope"),
        env: os_env(&home.env),
    };
    let error = Runtime::boot(settings, missing).unwrap_err();
    assert_eq!(error.code(), "WORKSPACE_UNAVAILABLE");
    assert_eq!(
        dsh_agent_loop::AgentLoopPlugin::NAME,
        crate::config::AGENT_LOOP_ROW
    );
}

#[test]
fn the_derived_adapter_row_carries_the_anonymous_user_id() {
    let plain = home(None, &[]);
    let settings = settings_of(&plain, &Overrides::default());
    let id = anonymous_user_id(&settings.home.value).unwrap();
    let composition = boot_composition_with_user_id(&settings, Some(id.clone()));
    let adapter = row(&composition, config::LLM_OPENAI_ROW);
    assert_eq!(adapter["userId"], json!(id));
    let expected = serde_json::to_value(dsh_llm_openai::OpenAiConfig {
        user_id: Some(id),
        ..openai_config(&settings)
    })
    .unwrap();
    assert_eq!(adapter, &expected);
    // Without an id the row is exactly the settings' config.
    let without = boot_composition(&settings);
    assert!(row(&without, config::LLM_OPENAI_ROW)
        .get("userId")
        .is_none());
}

#[test]
fn the_binary_registers_the_event_types_of_every_crate_it_links() {
    register_event_types().unwrap();
    // Boot and `dispatch` register again; that must be a no-op.
    register_event_types().unwrap();
    let declared: Vec<&str> = EVENT_TYPES
        .iter()
        .flat_map(|batch| batch.iter())
        .map(|d| d.type_name())
        .collect();
    assert_eq!(
        declared,
        [
            "approval/asked",
            "approval/decided",
            "approval/policy",
            "sandbox/mode",
            "permission/preset",
            "compaction/start",
            "compaction/summary",
            "compaction/end",
            "compaction/prune",
            "subagent/descriptor",
            "hook/invoked",
            "hook/result",
            "skills/catalog",
            "goal/change",
            "plan/mode",
            "session/title",
            "session/title-llm-request"
        ]
    );
    for name in declared {
        let registered = dsh_session::declared_event_type(name).unwrap();
        let owner = if name.starts_with("compaction/") {
            "dsh_compaction::"
        } else if name.starts_with("subagent/") {
            "dsh_subagents::"
        } else if name.starts_with("hook/") {
            "dsh_hooks::"
        } else if name.starts_with("skills/") {
            "dsh_skills::"
        } else if name.starts_with("goal/")
            || name.starts_with("plan/")
            || name.starts_with("session/title")
        {
            "dsh_modes::"
        } else {
            "dsh_tools_builtin::"
        };
        assert!(registered.rust_name().starts_with(owner), "{name}");
    }
    // The invariant companions are registered with them.
    assert!(dsh_session::registered_invariant_companions().any(|name| name == "compaction"));
}

#[test]
fn a_resumed_session_keeps_its_safety_only_when_not_wider_than_this_run() {
    use super::agent::resumed_safety;
    use dsh_tools_builtin::approval::SafetyFold;
    use dsh_tools_builtin::ApprovalPolicy::{Ask, Never, Untrusted};
    use dsh_tools_builtin::SandboxMode::{DangerFullAccess, ReadOnly, WorkspaceWrite};
    let recorded = |sandbox, policy| SafetyFold {
        preset: None,
        sandbox: Some(sandbox),
        policy: Some(policy),
    };
    let plain = home(None, &[]);
    let defaults = settings_of(&plain, &Overrides::default());

    // Narrower than this run's defaults: kept, nothing to say.
    let kept = resumed_safety(&recorded(ReadOnly, Untrusted), &defaults);
    assert_eq!(
        (kept.sandbox, kept.policy, kept.log_sandbox),
        (ReadOnly, Untrusted, false)
    );
    assert!(kept.changes.is_empty());

    // Wider: this run's settings, and why.
    let wide = resumed_safety(&recorded(DangerFullAccess, Never), &defaults);
    assert_eq!(
        (wide.sandbox, wide.policy, wide.log_sandbox),
        (WorkspaceWrite, Ask, true)
    );
    let said: Vec<String> = wide.changes.iter().map(ToString::to_string).collect();
    assert_eq!(
        said,
        [
            "the resumed session was recorded with sandbox \"danger-full-access\", wider than \
             this run's \"workspace-write\", so it runs under \"workspace-write\" (give --sandbox \
             danger-full-access again to keep it)",
            "the resumed session was recorded with approval policy \"never\", wider than this \
             run's \"ask\", so it runs under \"ask\" (give --approval never again to keep it)",
        ]
    );

    // The same flags again keep it; a flag of this run wins either way, and says so.
    let danger = Overrides {
        sandbox: Some(DangerFullAccess),
        ..Overrides::default()
    };
    let again = resumed_safety(
        &recorded(DangerFullAccess, Never),
        &settings_of(&plain, &danger),
    );
    assert_eq!((again.sandbox, again.policy), (DangerFullAccess, Never));
    assert!(again.changes.is_empty());
    let widened = resumed_safety(&recorded(ReadOnly, Ask), &settings_of(&plain, &danger));
    assert_eq!((widened.sandbox, widened.policy), (DangerFullAccess, Never));
    assert_eq!(
        widened.changes[0].to_string(),
        "the resumed session was recorded with sandbox \"read-only\"; this run's flag --sandbox \
         chooses \"danger-full-access\""
    );

    // The settings file is "what this run would choose" too, but not a choice made now.
    let file = home(Some("[sandbox]\nmode = \"read-only\"\n"), &[]);
    let narrowed = resumed_safety(
        &recorded(WorkspaceWrite, Ask),
        &settings_of(&file, &Overrides::default()),
    );
    assert_eq!(narrowed.sandbox, ReadOnly);
    assert_eq!(narrowed.changes.len(), 1);

    // A log without the knobs (an original's session) gets this run's, logged, silently.
    let bare = resumed_safety(&SafetyFold::default(), &defaults);
    assert_eq!(
        (bare.sandbox, bare.policy, bare.log_sandbox),
        (WorkspaceWrite, Ask, true)
    );
    assert!(bare.changes.is_empty());
}

#[test]
fn skill_and_command_roots_are_derived_nearest_first() {
    let home = home(
        Some("[skills]\ndirs = [\"~/team\", \"shared\", \"/abs/skills\"]\n"),
        &[("HOME", "/users/me")],
    );
    let settings = settings_of(&home, &Overrides::default());
    let dsh_home = home.dir.path();
    let project = tempfile::tempdir().unwrap();
    std::fs::create_dir(project.path().join(".git")).unwrap();
    let workspace = project.path().join("sub/dir");
    std::fs::create_dir_all(&workspace).unwrap();
    let mut composition = boot_composition(&settings);
    assert_eq!(
        row(&composition, config::SKILLS_ROW),
        &serde_json::Value::Null
    );
    derive_skills_row(
        &mut composition,
        &settings,
        &workspace,
        Some(Path::new("/users/me")),
    );
    let p = project.path().display().to_string();
    let h = dsh_home.display().to_string();
    let roots = |key: &str| -> Vec<(String, String)> {
        row(&composition, config::SKILLS_ROW)[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    r["path"].as_str().unwrap().to_owned(),
                    r["source"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    };
    let pair = |path: String, source: &str| (path, source.to_owned());
    assert_eq!(
        roots("skillRoots"),
        [
            pair(format!("{p}/.dsh/skills"), "project-dsh"),
            pair(format!("{p}/.agents/skills"), "project-agents"),
            pair(format!("{p}/.claude/skills"), "project-claude"),
            pair("/users/me/team".into(), "custom"),
            pair(format!("{h}/shared"), "custom"),
            pair("/abs/skills".into(), "custom"),
            pair(format!("{h}/skills"), "user-dsh"),
            pair("/users/me/.agents/skills".into(), "user-agents"),
            pair("/users/me/.claude/skills".into(), "user-claude"),
        ]
    );
    assert_eq!(
        roots("commandRoots"),
        [
            pair(format!("{p}/.dsh/commands"), "project-dsh"),
            pair(format!("{p}/.claude/commands"), "project-claude"),
            pair(format!("{h}/commands"), "user-dsh"),
            pair("/users/me/.claude/commands".into(), "user-claude"),
        ]
    );
    assert_eq!(
        row(&composition, config::SKILLS_ROW)["catalogDescriptionMaxLength"],
        json!(500)
    );
}

#[test]
fn a_bad_skills_table_names_the_key() {
    let home = home(Some("[skills]\ndirs = \"one\"\n"), &[]);
    let error = load(&home.env, &Overrides::default())
        .unwrap_err()
        .to_string();
    assert!(error.contains("skills.dirs"), "{error}");
    let home = self::home(Some("[skills]\nroots = []\n"), &[]);
    let error = load(&home.env, &Overrides::default())
        .unwrap_err()
        .to_string();
    assert!(error.contains("skills.roots"), "{error}");
}
