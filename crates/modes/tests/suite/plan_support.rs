//! A harness with the three rows mounted, a scripted question provider, and the log as
//! outline lines with this crate's records spelled out.

use dsh_agent::Agent;
use dsh_kernel::sync::lock;
use dsh_modes::question::{Answer, AnswerItem, QuestionOutcome, QuestionRequest};
use dsh_modes::{
    PlanModePlugin, QuestionProvider, SessionTitlePlugin, UserQuestions, UserQuestionsPlugin,
};
use dsh_session::{EventData, SessionEvent};
use dsh_testkit::harness::{Harness, HarnessBuilder};
use dsh_testkit::normalize::outline;
use futures_util::future::BoxFuture;
use std::sync::{Arc, Mutex};
use tokio::sync::Notify;

pub fn mount(builder: HarnessBuilder, titles: Option<dsh_modes::title::TitleConfig>) -> Harness {
    let h = builder.build();
    h.ctx().plugin::<UserQuestionsPlugin>(()).unwrap();
    h.ctx()
        .plugin::<PlanModePlugin>(Default::default())
        .unwrap();
    if let Some(config) = titles {
        h.ctx().plugin::<SessionTitlePlugin>(config).unwrap();
    }
    h
}

/// The log, one line per event (chunks left out); `plan/mode`, `session/title*` lines carry
/// their data.
pub fn lines(events: &[Arc<SessionEvent>]) -> Vec<String> {
    outline(events)
        .into_iter()
        .zip(events)
        .filter(|(line, _)| !line.starts_with("chunk "))
        .map(|(line, event)| match &event.data {
            EventData::Other { type_name, data } if type_name != "session/title-llm-request" => {
                format!("{type_name} {data}")
            }
            _ => match line.find(" cites [") {
                Some(at) => line[..at].to_owned(),
                None => line,
            },
        })
        .collect()
}

/// Answers every question with what the test queued, or waits (for a cancel) when nothing is
/// queued; records what it was asked.
#[derive(Default)]
pub struct ScriptedPerson {
    pub outcomes: Mutex<Vec<QuestionOutcome>>,
    pub asked: Mutex<Vec<QuestionRequest>>,
    pub seen: Notify,
}

impl ScriptedPerson {
    pub fn install(h: &Harness, outcomes: Vec<QuestionOutcome>) -> Arc<Self> {
        let person = Arc::new(Self {
            outcomes: Mutex::new(outcomes),
            ..Self::default()
        });
        let service = h.ctx().require::<UserQuestions>().unwrap();
        std::mem::forget(service.register_provider(person.clone()).unwrap());
        person
    }
}

impl QuestionProvider for ScriptedPerson {
    fn ask(&self, request: QuestionRequest) -> BoxFuture<'_, QuestionOutcome> {
        Box::pin(async move {
            lock(&self.asked).push(request);
            self.seen.notify_one();
            let next = {
                let mut queued = lock(&self.outcomes);
                (!queued.is_empty()).then(|| queued.remove(0))
            };
            match next {
                Some(outcome) => outcome,
                None => std::future::pending().await,
            }
        })
    }
}

pub fn answer(id: &str, selected: &[&str], custom: Option<&str>) -> QuestionOutcome {
    QuestionOutcome::Answered(Answer {
        answers: vec![AnswerItem {
            id: id.into(),
            selected: selected.iter().map(|s| (*s).to_owned()).collect(),
            custom: custom.map(str::to_owned),
        }],
    })
}

pub async fn run(agent: &Arc<dyn Agent>, text: &str) {
    dsh_testkit::harness::run_followup(agent, text).await;
}
