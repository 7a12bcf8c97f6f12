//! [`SessionTitles`]: when a session is titled, and the `session-title` row.
//!
//! At the first model request of a session whose log has no title yet, the fallback (the
//! first prompt's opening words) is logged at once, before the request's header, and the
//! model is asked for a better one beside the turn (top-level sessions only: a child never
//! gets a model title). A title a person gave (`rename`) pins the session: nothing automatic
//! replaces it, and work in flight is dropped.

use super::events::{session_title, SessionTitle, TitleLlmRequest, TitleRoute, TitleSource};
use super::normalize::{fallback_title, normalize_title};
use super::request::{
    ask_for_title, framed_input, request_message, system_prompt, TitleCall, TitleInput,
    TITLE_PROVIDER,
};
use dsh_agent::{Agent, AgentRegistry, AgentRequest};
use dsh_kernel::sync::lock;
use dsh_kernel::{BoxError, Context, Plugin};
use dsh_llm::LlmRuntime;
use dsh_protocol::{ContentBlock, MessageSource, SessionId};
use dsh_session::{EventData, Session, SessionDisposed, SessionError, SessionEvent};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Why a title was refused.
#[derive(Debug, thiserror::Error)]
pub enum TitleError {
    #[error("a session title must contain visible characters")]
    Invalid,
    #[error(transparent)]
    Session(#[from] SessionError),
}

impl TitleError {
    pub fn code(&self) -> &'static str {
        match self {
            Self::Invalid => "SESSION_TITLE_INVALID",
            Self::Session(error) => error.code(),
        }
    }
}

/// The `session-title` row's config (camelCase; the original's shipped values by default).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct TitleConfig {
    pub fallback_max_words: usize,
    pub fallback_max_bytes: usize,
    pub max_title_bytes: usize,
    /// Ask the model for a title (off: the fallback only).
    pub model_titles: bool,
    pub target_words: u64,
    pub target_cjk_characters: u64,
    /// A first prompt whose framed input is larger gets no model title (the fallback stays).
    pub max_input_bytes: usize,
    pub max_output_tokens: u64,
    pub timeout_ms: u64,
    /// Another route for titles (with `model`); by default the session's own.
    pub provider: Option<String>,
    pub model: Option<String>,
}

impl Default for TitleConfig {
    fn default() -> Self {
        Self {
            fallback_max_words: 5,
            fallback_max_bytes: 40,
            max_title_bytes: 80,
            model_titles: true,
            target_words: 5,
            target_cjk_characters: 10,
            max_input_bytes: 4096,
            max_output_tokens: 64,
            timeout_ms: 60_000,
            provider: None,
            model: None,
        }
    }
}

impl TitleConfig {
    fn check(&self) -> Result<(), String> {
        let positive = [
            ("fallbackMaxWords", self.fallback_max_words as u64),
            ("fallbackMaxBytes", self.fallback_max_bytes as u64),
            ("maxTitleBytes", self.max_title_bytes as u64),
            ("targetWords", self.target_words),
            ("targetCjkCharacters", self.target_cjk_characters),
            ("maxInputBytes", self.max_input_bytes as u64),
            ("maxOutputTokens", self.max_output_tokens),
            ("timeoutMs", self.timeout_ms),
        ];
        if let Some((name, _)) = positive.iter().find(|(_, v)| *v == 0) {
            return Err(format!("session-title: {name} must be a positive integer"));
        }
        if self.fallback_max_bytes > self.max_title_bytes {
            return Err("session-title: fallbackMaxBytes must not exceed maxTitleBytes".into());
        }
        if self.provider.is_some() != self.model.is_some() {
            return Err("session-title: provider and model must be supplied together".into());
        }
        Ok(())
    }
}

struct Work {
    revision: u64,
    cancel: CancellationToken,
}

/// The title service. See the module docs.
pub struct SessionTitles {
    config: TitleConfig,
    ctx: Context,
    work: Mutex<HashMap<SessionId, Work>>,
    /// Title tasks in flight, so a test or a shutdown can wait for them.
    running: Arc<tokio::sync::Semaphore>,
}

impl std::fmt::Debug for SessionTitles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionTitles")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

const MAX_TASKS: u32 = 1 << 16;

/// The human messages a title may be made from: person-typed `user/message`s with text.
fn eligible(events: &[Arc<SessionEvent>]) -> Vec<TitleInput> {
    events
        .iter()
        .filter_map(|event| match &event.data {
            EventData::UserMessage(message)
                if matches!(message.source, MessageSource::User { .. }) =>
            {
                let text: Vec<&str> = message
                    .content
                    .iter()
                    .filter_map(ContentBlock::as_text)
                    .collect();
                let text = text.join("\n");
                (!normalize_title(&text, usize::MAX).is_empty()).then_some(TitleInput {
                    seq: event.seq,
                    text,
                })
            }
            _ => None,
        })
        .collect()
}

impl SessionTitles {
    pub fn new(ctx: &Context, config: TitleConfig) -> Self {
        Self {
            config,
            ctx: ctx.clone(),
            work: Mutex::new(HashMap::new()),
            running: Arc::new(tokio::sync::Semaphore::new(MAX_TASKS as usize)),
        }
    }

    /// The latest title of `session`.
    pub fn get(&self, session: &Session) -> Option<SessionTitle> {
        session_title(session)
    }

    /// A person's title: normalized (blank is refused), logged with source `user`, and
    /// pinned: automatic work in flight is dropped and none starts later.
    pub fn rename(&self, session: &Session, title: &str) -> Result<SessionTitle, TitleError> {
        let title = normalize_title(title, self.config.max_title_bytes);
        if title.is_empty() {
            return Err(TitleError::Invalid);
        }
        self.supersede(session.id());
        let record = SessionTitle {
            title,
            message_seqs: Vec::new(),
            source: TitleSource::User,
        };
        session.append_typed(&record)?;
        Ok(record)
    }

    /// Waits until no title request is in flight.
    pub async fn when_quiet(&self) {
        let _all = self.running.acquire_many(MAX_TASKS).await;
    }

    fn supersede(&self, session: &SessionId) -> u64 {
        let mut work = lock(&self.work);
        let entry = work.entry(session.clone()).or_insert_with(|| Work {
            revision: 0,
            cancel: CancellationToken::new(),
        });
        entry.cancel.cancel();
        entry.revision += 1;
        entry.cancel = CancellationToken::new();
        entry.revision
    }

    fn is_current(&self, session: &SessionId, revision: u64) -> bool {
        lock(&self.work)
            .get(session)
            .is_some_and(|w| w.revision == revision && !w.cancel.is_cancelled())
    }

    fn forget(&self, session: &SessionId) {
        if let Some(work) = lock(&self.work).remove(session) {
            work.cancel.cancel();
        }
    }

    /// Before a model request of `agent` on `route`: the fallback when the log has no title
    /// yet, and, for a top-level session's first prompt, the model title started beside it.
    fn before_request(self: &Arc<Self>, agent: &Arc<dyn Agent>, route: TitleRoute) {
        let session = agent.session();
        if session_title(session).is_some() {
            return;
        }
        let inputs = eligible(&session.events());
        let Some(first) = inputs.first().cloned() else {
            return;
        };
        let fallback = fallback_title(
            &first.text,
            self.config.fallback_max_words,
            self.config.fallback_max_bytes,
        );
        if !fallback.is_empty() {
            let record = SessionTitle {
                title: fallback,
                message_seqs: vec![first.seq],
                source: TitleSource::Fallback,
            };
            if let Err(error) = session.append_typed(&record) {
                tracing::warn!(%error, "session-title: could not log the fallback title");
                return;
            }
        }
        let registry = self.ctx.get::<AgentRegistry>();
        let delegated = dsh_subagents::is_delegated(agent.as_ref(), registry.as_deref());
        if !self.config.model_titles || inputs.len() != 1 || delegated {
            return;
        }
        let Ok(permit) = self.running.clone().try_acquire_owned() else {
            return;
        };
        let route = match (&self.config.provider, &self.config.model) {
            (Some(provider), Some(model)) => TitleRoute {
                provider: provider.clone(),
                model: model.clone(),
            },
            _ => route,
        };
        let revision = self.supersede(session.id());
        let cancel = lock(&self.work)
            .get(session.id())
            .map(|w| w.cancel.clone())
            .unwrap_or_default();
        let (service, session) = (self.clone(), session.clone());
        tokio::spawn(async move {
            let _permit = permit;
            if let Err(why) = service
                .model_title(&session, first, route, revision, &cancel)
                .await
            {
                tracing::warn!(session = %session.id(), "automatic title generation failed: {why}");
            }
        });
    }

    async fn model_title(
        &self,
        session: &Session,
        first: TitleInput,
        route: TitleRoute,
        revision: u64,
        cancel: &CancellationToken,
    ) -> Result<(), String> {
        let framed = framed_input(std::slice::from_ref(&first));
        if framed.len() > self.config.max_input_bytes {
            return Err(format!(
                "input is {} bytes, exceeding maxInputBytes {}",
                framed.len(),
                self.config.max_input_bytes
            ));
        }
        let llm = self
            .ctx
            .get::<LlmRuntime>()
            .ok_or("no model runtime is mounted")?;
        let system = system_prompt(self.config.target_words, self.config.target_cjk_characters);
        let message = request_message(framed);
        if !self.is_current(session.id(), revision) {
            return Ok(());
        }
        session
            .append_typed(&TitleLlmRequest {
                title_provider: TITLE_PROVIDER.into(),
                message_seqs: vec![first.seq],
                route: route.clone(),
                system: system.clone(),
                messages: vec![message.clone()],
                max_tokens: self.config.max_output_tokens,
            })
            .map_err(|e| e.to_string())?;
        let call = TitleCall {
            route: route.clone(),
            session: session.id().clone(),
            system,
            message,
            max_tokens: self.config.max_output_tokens,
            timeout: Duration::from_millis(self.config.timeout_ms),
        };
        let text = ask_for_title(&llm, call, cancel).await?;
        let title = normalize_title(&text, self.config.max_title_bytes);
        if title.is_empty() {
            return Err("the title model produced no text".into());
        }
        let pinned = matches!(
            session_title(session).map(|t| t.source),
            Some(TitleSource::User)
        );
        if pinned || !self.is_current(session.id(), revision) {
            return Ok(());
        }
        session
            .append_typed(&SessionTitle {
                title,
                message_seqs: vec![first.seq],
                source: TitleSource::Provider {
                    provider: TITLE_PROVIDER.into(),
                    model: Some(route),
                },
            })
            .map_err(|e| e.to_string())?;
        Ok(())
    }
}

/// The `session-title` row: provides [`SessionTitles`] and sits on `agent/request`.
#[derive(Debug)]
pub struct SessionTitlePlugin;

impl Plugin for SessionTitlePlugin {
    const NAME: &'static str = "session-title";
    type Config = TitleConfig;

    fn apply(ctx: &Context, config: TitleConfig) -> Result<(), BoxError> {
        config.check()?;
        let titles = Arc::new(SessionTitles::new(ctx, config));
        ctx.provide(titles.clone())?.forget();
        let service = titles.clone();
        ctx.on_waterfall::<AgentRequest, _, _>(move |args, next| {
            let service = service.clone();
            async move {
                let config = next.run().await?;
                if !args.signal.is_aborted() {
                    let route = TitleRoute {
                        provider: config.provider.clone(),
                        model: config.model.clone(),
                    };
                    service.before_request(&args.agent, route);
                }
                Ok(config)
            }
        })?
        .forget();
        ctx.on::<SessionDisposed>(move |session| {
            titles.forget(session.id());
            Ok(())
        })?
        .forget();
        Ok(())
    }
}
