//! dsh's persona: the system-prompt section that tells the model what kind of agent it is.
//!
//! The harness identity line comes from `dsh-prompt` itself ([`HARNESS_IDENTITY`]); this
//! module adds the persona template that follows it. The template references `{{model}}`,
//! `{{provider}}` and `{{cwd}}` (registered per agent by the loop) and `{{platform}}` and
//! `{{date}}` (registered here, fixed for the process so the prompt stays cache-stable).
//!
//! [`HARNESS_IDENTITY`]: dsh_prompt::HARNESS_IDENTITY

use dsh_kernel::{Context, Disposer};
use dsh_prompt::{PromptError, Section, SystemPrompt, SystemPromptConfig, PERSONA_SECTION};
use std::time::{SystemTime, UNIX_EPOCH};

/// Variable naming the operating system and CPU architecture.
pub const PLATFORM_VARIABLE: &str = "platform";
/// Variable holding today's date (UTC, `YYYY-MM-DD`).
pub const DATE_VARIABLE: &str = "date";

/// The persona, rendered after the harness identity.
pub const PERSONA_TEMPLATE: &str = "\
You are a careful software engineering agent. You run the {{model}} model through the \
{{provider}} provider, on {{platform}}, in the working directory {{cwd}}. Today is {{date}}.

How you work:
- Understand before you change anything. Read the files involved and search the code base \
before editing; never edit a file you have not read in this session.
- Use the dedicated tools: read files with read, find them with glob, search them with grep, \
and change them with edit or write. Use the shell to build, test and run programs, not to \
print or rewrite files with cat, sed or echo.
- Keep changes as small as the task allows. Match the surrounding style, and leave code you \
were not asked to touch alone.
- Verify your work. Run the relevant tests or build, read any failure closely, and fix it \
before you report success. Say so plainly when you could not verify something.
- Stop and ask before anything destructive or hard to undo, such as deleting data, \
rewriting version-control history, or changing files outside the workspace.
- When you finish, say briefly what you changed, how you checked it, and what is left.";

/// The persona as a section that replaces the deployment persona wherever it is in effect.
pub fn persona_section() -> Section {
    Section::new(PERSONA_SECTION, 0.0, PERSONA_TEMPLATE)
}

/// The system-prompt plugin's configuration with dsh's persona as the global persona.
pub fn system_prompt_config() -> SystemPromptConfig {
    SystemPromptConfig {
        persona: PERSONA_TEMPLATE.to_owned(),
        ..SystemPromptConfig::default()
    }
}

/// Facts about the machine the persona mentions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostFacts {
    /// For example `linux (x86_64)`.
    pub platform: String,
    /// `YYYY-MM-DD`, UTC.
    pub date: String,
}

impl HostFacts {
    /// This machine, today.
    pub fn detect() -> Self {
        let days = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() / 86_400);
        Self {
            platform: format!("{} ({})", std::env::consts::OS, std::env::consts::ARCH),
            date: civil_date(days),
        }
    }
}

/// Registers the `platform` and `date` variables through `ctx` (global when `ctx` has no
/// scope). The returned disposers undo the registrations; they also unwind with `ctx`'s
/// fiber.
pub fn register_host_variables(
    prompt: &SystemPrompt,
    ctx: &Context,
    facts: HostFacts,
) -> Result<Vec<Disposer>, PromptError> {
    let HostFacts { platform, date } = facts;
    Ok(vec![
        prompt.variable(ctx, PLATFORM_VARIABLE, move |_| Some(platform.clone()))?,
        prompt.variable(ctx, DATE_VARIABLE, move |_| Some(date.clone()))?,
    ])
}

/// Registers [`persona_section`] in `ctx`'s scope, shadowing the global persona for that
/// scope (an agent, say). Registering it in the scope that already holds a persona is
/// refused as a duplicate; use [`system_prompt_config`] for the global one.
pub fn register_persona(prompt: &SystemPrompt, ctx: &Context) -> Result<Disposer, PromptError> {
    prompt.section(ctx, persona_section())
}

/// `YYYY-MM-DD` of the day `days` after 1970-01-01 (proleptic Gregorian calendar).
pub(crate) fn civil_date(days: u64) -> String {
    // Howard Hinnant's days-to-civil algorithm, shifted so eras start on March 1st.
    let z = days + 719_468;
    let era = z / 146_097;
    let day_of_era = z % 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1_460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let mp = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = year_of_era + era * 400 + u64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_kernel::ScopeKey;
    use dsh_prompt::{render_prompt, AssembleContext, SystemPromptPlugin};

    #[test]
    fn civil_dates() {
        assert_eq!(civil_date(0), "1970-01-01");
        assert_eq!(civil_date(11_016), "2000-02-29");
        assert_eq!(civil_date(20_454), "2026-01-01");
    }

    fn facts() -> HostFacts {
        HostFacts {
            platform: "linux (x86_64)".into(),
            date: "2026-03-04".into(),
        }
    }

    #[tokio::test]
    async fn identity_then_persona_render_with_all_variables() {
        let root = Context::root();
        root.plugin::<SystemPromptPlugin>(system_prompt_config())
            .unwrap();
        let prompt = root.require::<SystemPrompt>().unwrap();
        register_host_variables(&prompt, &root, facts()).unwrap();
        // What the agent loop registers per agent.
        for (name, value) in [
            ("model", "deepseek-v4-flash"),
            ("provider", "deepseek-official"),
            ("cwd", "/work/app"),
        ] {
            prompt
                .variable(&root, name, move |_| Some(value.to_owned()))
                .unwrap()
                .forget();
        }
        let assembly = prompt
            .assemble(&root, AssembleContext::default())
            .await
            .unwrap();
        let system = render_prompt(&assembly).unwrap();
        let persona = PERSONA_TEMPLATE
            .replace("{{model}}", "deepseek-v4-flash")
            .replace("{{provider}}", "deepseek-official")
            .replace("{{platform}}", "linux (x86_64)")
            .replace("{{cwd}}", "/work/app")
            .replace("{{date}}", "2026-03-04");
        assert_eq!(
            system,
            format!("{}\n\n{persona}", dsh_prompt::HARNESS_IDENTITY)
        );
        assert!(persona.starts_with(
            "You are a careful software engineering agent. You run the deepseek-v4-flash model \
             through the deepseek-official provider, on linux (x86_64), in the working directory \
             /work/app. Today is 2026-03-04.\n\nHow you work:\n"
        ));
        assert!(
            !persona.contains("{{"),
            "every variable is filled: {persona}"
        );
    }

    #[tokio::test]
    async fn an_agent_scope_can_carry_the_persona_over_an_empty_global_one() {
        let root = Context::root();
        root.plugin::<SystemPromptPlugin>(SystemPromptConfig::default())
            .unwrap();
        let prompt = root.require::<SystemPrompt>().unwrap();
        let agent = root.create_scope(ScopeKey::new("agent"), None).unwrap();
        let section = register_persona(&prompt, &agent).unwrap();
        assert!(
            register_persona(&prompt, &agent).is_err(),
            "same scope twice is a duplicate"
        );
        let sections = |scope: Option<ScopeKey>| {
            let prompt = prompt.clone();
            let root = root.clone();
            async move {
                let assembly = prompt
                    .assemble(&root, AssembleContext::new(scope))
                    .await
                    .unwrap();
                assembly
                    .sections
                    .iter()
                    .map(|s| s.text.clone())
                    .collect::<Vec<_>>()
            }
        };
        let in_agent = sections(agent.scope().cloned()).await;
        assert!(in_agent.iter().any(|t| t == PERSONA_TEMPLATE));
        assert!(!sections(None).await.iter().any(|t| t == PERSONA_TEMPLATE));
        section.dispose();
        assert!(!sections(agent.scope().cloned())
            .await
            .iter()
            .any(|t| t == PERSONA_TEMPLATE));
    }
}
