//! Registry scoping, rejections, notifications and execution-mode classification.

use super::{setup, TestTool};
use dsh_kernel::{Context, ScopeKey};
use dsh_protocol::{CallId, ToolSchema};
use dsh_tools::{
    ExecutionMode, RegistryError, Restriction, ToolInvocation, ToolsChange, RESERVED_TOOL_NAME,
};
use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

fn description(tools: &dsh_tools::ToolRuntime, scope: Option<&ScopeKey>, name: &str) -> String {
    tools
        .get(scope, name)
        .map(|t| t.description())
        .unwrap_or_default()
}

/// A single-name lookup (`get`, which the pipeline resolves calls with) finds exactly the
/// tools the scope's listing shows.
fn assert_lookups_match_view(tools: &dsh_tools::ToolRuntime, scope: Option<&ScopeKey>) {
    let listed = tools.names(scope);
    for name in ["a", "b", "c", "p", "missing"] {
        assert_eq!(
            tools.get(scope, name).is_some(),
            listed.iter().any(|n| n == name),
            "{name} in {scope:?}"
        );
    }
}

/// root scope <- parent <- child, each with its own context (and fiber).
fn family(ctx: &Context) -> (Context, Context) {
    let parent = ctx.create_scope(ScopeKey::new("parent"), None).unwrap();
    let child = ctx
        .create_scope(ScopeKey::new("child"), parent.scope())
        .unwrap();
    (parent, child)
}

#[test]
fn nearest_registration_wins() {
    let (ctx, tools) = setup();
    let (parent, child) = family(&ctx);
    tools
        .register(&ctx, TestTool::echo("a").described("global a").arc())
        .unwrap()
        .forget();
    tools
        .register(&ctx, TestTool::echo("b").described("global b").arc())
        .unwrap()
        .forget();
    tools
        .register(&parent, TestTool::echo("a").described("parent a").arc())
        .unwrap()
        .forget();
    tools
        .register(&child, TestTool::echo("c").described("child c").arc())
        .unwrap()
        .forget();

    assert_eq!(tools.names(None), names(&["a", "b"]));
    assert_eq!(description(&tools, None, "a"), "global a");
    assert_eq!(description(&tools, parent.scope(), "a"), "parent a");
    assert_eq!(description(&tools, child.scope(), "a"), "parent a");
    assert_eq!(tools.names(child.scope()), names(&["a", "b", "c"]));
    assert_eq!(tools.names(parent.scope()), names(&["a", "b"]));
    // an unrelated scope sees only the global layer
    let stranger = ScopeKey::new("stranger");
    assert_eq!(description(&tools, Some(&stranger), "a"), "global a");
    assert!(tools.get(Some(&stranger), "c").is_none());
}

#[test]
fn schemas_carry_only_name_description_and_parameters() {
    let (ctx, tools) = setup();
    let params =
        json!({"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]});
    tools
        .register(
            &ctx,
            TestTool::echo("x")
                .parameters(params.clone())
                .timeout(Duration::from_secs(3))
                .arc(),
        )
        .unwrap()
        .forget();
    assert_eq!(
        tools.schemas(None),
        vec![ToolSchema {
            name: "x".into(),
            description: "x tool".into(),
            parameters: params.into()
        }]
    );
    assert_eq!(
        serde_json::to_value(tools.schemas(None)).unwrap(),
        json!([{"name": "x", "description": "x tool", "parameters": {"type": "object",
            "properties": {"x": {"type": "string"}}, "required": ["x"]}}])
    );
}

#[test]
fn restrictions_filter_inherited_tools_only() {
    let (ctx, tools) = setup();
    let (parent, child) = family(&ctx);
    for name in ["a", "b", "c"] {
        tools
            .register(&ctx, TestTool::echo(name).arc())
            .unwrap()
            .forget();
    }
    tools
        .register(&parent, TestTool::echo("p").arc())
        .unwrap()
        .forget();

    tools
        .restrict(
            &parent,
            Restriction {
                allow: Some(names(&["a", "b"])),
                deny: None,
            },
        )
        .unwrap()
        .forget();
    // the parent's own tool is never filtered by its own restriction
    assert_eq!(tools.names(parent.scope()), names(&["a", "b", "p"]));
    // the child inherits the parent's restriction, which now also covers the parent's tools
    assert_eq!(tools.names(child.scope()), names(&["a", "b"]));
    assert_lookups_match_view(&tools, parent.scope());
    assert_lookups_match_view(&tools, child.scope());

    let deny = tools
        .restrict(
            &child,
            Restriction {
                allow: None,
                deny: Some(names(&["a"])),
            },
        )
        .unwrap();
    assert_eq!(tools.names(child.scope()), names(&["b"]));
    assert_lookups_match_view(&tools, child.scope());
    // own registrations shadow and are never filtered
    tools
        .register(&child, TestTool::echo("a").described("own a").arc())
        .unwrap()
        .forget();
    assert_eq!(tools.names(child.scope()), names(&["b", "a"]));
    assert_eq!(description(&tools, child.scope(), "a"), "own a");
    deny.dispose();
    assert_eq!(tools.names(child.scope()), names(&["a", "b"]));
    assert_eq!(tools.names(None), names(&["a", "b", "c"]));
}

#[test]
fn restrictions_need_a_scope_and_known_names() {
    let (ctx, tools) = setup();
    let (parent, _child) = family(&ctx);
    tools
        .register(&ctx, TestTool::echo("a").arc())
        .unwrap()
        .forget();
    tools
        .register(&parent, TestTool::echo("own").arc())
        .unwrap()
        .forget();
    let err = tools.restrict(&ctx, Restriction::default()).unwrap_err();
    assert_eq!(err.code(), "UNSCOPED_RESTRICTION");
    let err = tools
        .restrict(
            &parent,
            Restriction {
                allow: None,
                deny: Some(names(&["nope"])),
            },
        )
        .unwrap_err();
    assert!(
        matches!(&err, RegistryError::UnknownTool { name } if name == "nope"),
        "{err:?}"
    );
    // own names are not inherited names
    let err = tools
        .restrict(
            &parent,
            Restriction {
                allow: Some(names(&["own"])),
                deny: None,
            },
        )
        .unwrap_err();
    assert_eq!(err.code(), "UNKNOWN_TOOL");
}

#[test]
fn registration_rejections() {
    let (ctx, tools) = setup();
    let cases: Vec<(TestTool, &str)> = vec![
        (TestTool::echo(""), "INVALID_TOOL_NAME"),
        (TestTool::echo("has space"), "INVALID_TOOL_NAME"),
        (TestTool::echo(&"x".repeat(65)), "INVALID_TOOL_NAME"),
        (
            TestTool::echo("s").parameters(json!({"type": "string"})),
            "INVALID_TOOL_SCHEMA",
        ),
        (
            TestTool::echo("s").parameters(json!("object")),
            "INVALID_TOOL_SCHEMA",
        ),
        (
            TestTool::echo("t").timeout(Duration::ZERO),
            "INVALID_TOOL_TIMEOUT",
        ),
        (TestTool::echo(RESERVED_TOOL_NAME), "RESERVED_TOOL_NAME"),
    ];
    for (tool, code) in cases {
        let name = tool.name.clone();
        assert_eq!(
            tools.register(&ctx, tool.arc()).unwrap_err().code(),
            code,
            "{name}"
        );
    }
    assert!(tools.names(None).is_empty());

    tools
        .register(&ctx, TestTool::echo("mcp__srv__x-1").arc())
        .unwrap()
        .forget();
    let err = tools
        .register(&ctx, TestTool::echo("mcp__srv__x-1").arc())
        .unwrap_err();
    assert_eq!(err.code(), "DUPLICATE_TOOL");
    // the same name in another layer is fine
    let scoped = ctx.create_scope(ScopeKey::new("s"), None).unwrap();
    tools
        .register(&scoped, TestTool::echo("mcp__srv__x-1").arc())
        .unwrap()
        .forget();
    // registering on a disposed fiber is refused and leaves nothing behind
    scoped.fiber().dispose();
    let err = tools
        .register(&scoped, TestTool::echo("late").arc())
        .unwrap_err();
    assert_eq!(err.code(), "INACTIVE_EFFECT");
    assert_eq!(tools.scoped_layer_count(), 0);
    assert_eq!(tools.names(scoped.scope()), names(&["mcp__srv__x-1"]));
}

#[test]
fn disposal_removes_exactly_its_registration() {
    let (ctx, tools) = setup();
    let scope = ctx.create_scope(ScopeKey::new("s"), None).unwrap();
    let global = tools
        .register(&ctx, TestTool::echo("a").described("global").arc())
        .unwrap();
    let own = tools
        .register(&scope, TestTool::echo("a").described("own").arc())
        .unwrap();
    assert_eq!(description(&tools, scope.scope(), "a"), "own");
    own.dispose();
    own.dispose(); // idempotent
    assert_eq!(description(&tools, scope.scope(), "a"), "global");
    assert_eq!(tools.scoped_layer_count(), 0);
    // a later same-name registration survives disposing the earlier handle again
    tools
        .register(&scope, TestTool::echo("a").described("again").arc())
        .unwrap()
        .forget();
    own.dispose();
    assert_eq!(description(&tools, scope.scope(), "a"), "again");
    global.dispose();
    assert_eq!(tools.names(None), Vec::<String>::new());
}

#[test]
fn scope_disposal_leaves_nothing_behind() {
    let (ctx, tools) = setup();
    tools
        .register(&ctx, TestTool::echo("g").arc())
        .unwrap()
        .forget();
    let before = (tools.names(None), ctx.fiber().live_counts());
    let scope = ctx.create_scope(ScopeKey::new("agent"), None).unwrap();
    tools
        .register(&scope, TestTool::echo("own").arc())
        .unwrap()
        .forget();
    tools
        .restrict(
            &scope,
            Restriction {
                allow: None,
                deny: Some(names(&["g"])),
            },
        )
        .unwrap()
        .forget();
    tools
        .guard(&scope, |_| dsh_tools::GuardDecision::Pass)
        .unwrap()
        .forget();
    assert_eq!(tools.names(scope.scope()), names(&["own"]));
    assert_eq!(tools.scoped_layer_count(), 1);
    scope.fiber().dispose();
    assert_eq!(tools.scoped_layer_count(), 0);
    assert_eq!(tools.names(scope.scope()), names(&["g"]));
    assert_eq!((tools.names(None), ctx.fiber().live_counts()), before);
}

#[test]
fn changes_are_announced_unscoped() {
    let (ctx, tools) = setup();
    let seen: Arc<Mutex<Vec<Option<String>>>> = Arc::default();
    let sink = seen.clone();
    // a scoped listener would not hear an unscoped dispatch; this one is unscoped
    ctx.on::<ToolsChange>(move |change| {
        sink.lock()
            .unwrap()
            .push(change.scope.as_ref().map(|s| s.name().to_owned()));
        Ok(())
    })
    .unwrap()
    .forget();
    let scope = ctx.create_scope(ScopeKey::new("s"), None).unwrap();
    let global = tools.register(&ctx, TestTool::echo("a").arc()).unwrap();
    tools
        .register(&scope, TestTool::echo("b").arc())
        .unwrap()
        .forget();
    scope.fiber().dispose();
    global.dispose();
    assert_eq!(
        *seen.lock().unwrap(),
        vec![None, Some("s".to_owned()), Some("s".to_owned()), None]
    );
    // a failed registration announces nothing
    tools.register(&ctx, TestTool::echo("").arc()).unwrap_err();
    assert_eq!(seen.lock().unwrap().len(), 4);
}

#[test]
fn execution_mode_is_parallel_only_for_an_explicit_true() {
    let (ctx, tools) = setup();
    let params = json!({"type": "object", "properties": {"ro": {"type": "boolean"}}});
    tools
        .register(
            &ctx,
            TestTool::echo("read")
                .parameters(params)
                .safe(|args| args["ro"] == json!(true))
                .arc(),
        )
        .unwrap()
        .forget();
    tools
        .register(&ctx, TestTool::echo("write").arc())
        .unwrap()
        .forget();
    tools
        .register(
            &ctx,
            TestTool::echo("boom")
                .safe(|_| panic!("classifier bug"))
                .arc(),
        )
        .unwrap()
        .forget();
    let mode = |name: &str, args: &str| {
        tools.execution_mode(&ToolInvocation::new(CallId::from("c"), name, args))
    };
    assert_eq!(mode("read", r#"{"ro": true}"#), ExecutionMode::Parallel);
    assert_eq!(mode("read", r#"{"ro": false}"#), ExecutionMode::Exclusive);
    assert_eq!(mode("read", r#"{"ro": "yes"}"#), ExecutionMode::Exclusive); // invalid args
    assert_eq!(mode("read", "not json"), ExecutionMode::Exclusive);
    assert_eq!(mode("write", "{}"), ExecutionMode::Exclusive);
    assert_eq!(mode("boom", "{}"), ExecutionMode::Exclusive);
    assert_eq!(mode("missing", "{}"), ExecutionMode::Exclusive);
    // classification follows the call's scope: a hidden tool is exclusive
    let scope = ctx.create_scope(ScopeKey::new("s"), None).unwrap();
    tools
        .restrict(
            &scope,
            Restriction {
                allow: Some(names(&["write"])),
                deny: None,
            },
        )
        .unwrap()
        .forget();
    let hidden = ToolInvocation::new(CallId::from("c"), "read", r#"{"ro": true}"#)
        .scope(scope.scope().unwrap().clone());
    assert_eq!(tools.execution_mode(&hidden), ExecutionMode::Exclusive);
}
