use dsh_agent::{
    AbortSignal, Agent, AgentCancelCause, AgentEvent, AgentStatus, RequestError,
    RequestErrorAction, RequestErrorArgs,
};
use dsh_agent_loop::{RetryPlugin, RetryPluginConfig};
use dsh_kernel::Context;
use dsh_llm::ResolvedRetryPolicy;
use dsh_protocol::{codes, LlmFailure, SessionId};
use dsh_session::{EventData, Session, SessionHeader};
use dsh_testkit::fake_agent::FakeAgent;
use serde_json::{json, Value};
use std::sync::Arc;

struct Fixture {
    root: Context,
    agent: Arc<dyn Agent>,
}

fn fixture() -> Fixture {
    let root = Context::root();
    root.plugin::<RetryPlugin>(RetryPluginConfig::default())
        .unwrap();
    let session = Session::builder(SessionHeader::new(SessionId::from("s"), 1))
        .clock(Arc::new(|| 7))
        .build()
        .unwrap();
    // Just enough agent for the retry listener: it only reads the session.
    let agent: Arc<dyn Agent> = FakeAgent::builder()
        .status(AgentStatus::Running)
        .create(&root, session)
        .unwrap();
    Fixture { root, agent }
}

impl Fixture {
    async fn offer(
        &self,
        failure: LlmFailure,
        policy: Option<ResolvedRetryPolicy>,
        signal: AbortSignal,
    ) -> Option<RequestErrorAction> {
        let args = Arc::new(AgentEvent {
            agent: self.agent.clone(),
            data: RequestErrorArgs {
                turn: 1,
                step: 1,
                provider: "deepseek-official".into(),
                failure,
                retry_policy: policy,
                signal,
            },
        });
        self.root
            .waterfall::<RequestError, _, _>(Some(self.agent.scope_key()), args, |_| async {
                Ok(None)
            })
            .await
            .unwrap()
    }

    fn log(&self) -> Vec<Value> {
        self.agent
            .session()
            .events()
            .iter()
            .map(|event| {
                let mut value = serde_json::to_value(&event.data).unwrap();
                value["type"] = json!(event.data.type_name());
                value
            })
            .collect()
    }
}

fn server_error() -> LlmFailure {
    LlmFailure {
        status: Some(500),
        ..LlmFailure::new(codes::SERVER, "Internal server error (mock)")
    }
}

#[tokio::test(start_paused = true)]
async fn retryable_failure_is_logged_waited_and_retried() {
    let fx = fixture();
    let action = fx
        .offer(
            server_error(),
            Some(ResolvedRetryPolicy::default()),
            AbortSignal::new(),
        )
        .await;
    assert_eq!(action, Some(RequestErrorAction::Retry));
    let mut log = fx.log();
    let delay = log[0]["delayMs"].as_f64().unwrap();
    assert!((450.0..=550.0).contains(&delay), "{delay}");
    let retry_id = log[0]["retryId"].clone();
    log[0]["delayMs"] = json!("<delay>");
    log[0]["retryId"] = json!("<id>");
    log[1]["retryId"] = json!("<id>");
    assert_eq!(
        log,
        vec![
            json!({"type":"llm/retry","retryId":"<id>","turn":1,"step":1,"provider":"deepseek-official",
                "mode":"normal",
                "policyKey":"[\"normal\",5,[\"EMPTY_RESPONSE\",\"RATE_LIMIT\",\"SERVER\",\"TIMEOUT\",\"TRANSPORT\"],500,10000,0.1]",
                "retry":1,"maxRetries":5,"delayMs":"<delay>",
                "failure":{"message":"Internal server error (mock)","code":"SERVER","status":500}}),
            json!({"type":"llm/retry-started","retryId":"<id>","turn":1,"step":1,"retry":1}),
        ]
    );
    assert!(retry_id.is_string());
}

#[tokio::test(start_paused = true)]
async fn retries_stop_at_the_limit_and_count_from_the_log() {
    let fx = fixture();
    for n in 1..=5 {
        let action = fx.offer(server_error(), None, AbortSignal::new()).await;
        assert_eq!(action, Some(RequestErrorAction::Retry), "retry {n}");
    }
    assert_eq!(
        fx.offer(server_error(), None, AbortSignal::new()).await,
        None
    );
    let retries: Vec<Value> = fx
        .log()
        .into_iter()
        .filter(|e| e["type"] == "llm/retry")
        .map(|e| e["retry"].clone())
        .collect();
    assert_eq!(
        retries,
        vec![json!(1), json!(2), json!(3), json!(4), json!(5)]
    );
    // Provider Retry-After within the cap is used as is.
    let fx = fixture();
    let hinted = LlmFailure {
        provider_retry_after_ms: Some(2000),
        ..LlmFailure::new(codes::RATE_LIMIT, "slow down")
    };
    fx.offer(hinted, None, AbortSignal::new()).await;
    assert_eq!(fx.log()[0]["delayMs"], json!(2000));
}

#[tokio::test(start_paused = true)]
async fn non_retryable_failures_pass_through() {
    let fx = fixture();
    let auth = LlmFailure::new(codes::AUTH, "bad key");
    assert_eq!(fx.offer(auth, None, AbortSignal::new()).await, None);
    assert!(fx.log().is_empty());
}

#[tokio::test(start_paused = true)]
async fn cancellation_during_the_wait_ends_without_retry() {
    let fx = fixture();
    let signal = AbortSignal::new();
    let cancel = signal.clone();
    tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        cancel.abort(AgentCancelCause::User);
    });
    assert_eq!(fx.offer(server_error(), None, signal).await, None);
    let types: Vec<Value> = fx.log().into_iter().map(|e| e["type"].clone()).collect();
    assert_eq!(types, vec![json!("llm/retry")]);
    assert!(matches!(
        fx.agent.session().events()[0].data,
        EventData::LlmRetry(_)
    ));
}
