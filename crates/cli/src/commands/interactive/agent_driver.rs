//! The UI's [`AgentDriver`] over the app's runtime: what each UI effect does to the live
//! agent, the store and the session's services.

use super::*;

impl AgentDriver for AppDriver {
    fn note_dirs(&self) -> Option<(std::path::PathBuf, std::path::PathBuf)> {
        Some((
            self.runtime.workspace().to_path_buf(),
            self.runtime.settings().home.value.clone(),
        ))
    }

    fn goal(&self, raw: &str) -> BoxFuture<'_, Result<Vec<String>, DriverError>> {
        let raw = raw.to_owned();
        Box::pin(async move { self.run_goal(&raw).await })
    }

    fn goal_line(&self) -> BoxFuture<'_, Option<String>> {
        Box::pin(AppDriver::goal_line(self))
    }

    fn steer(&self, text: &str) -> BoxFuture<'_, Result<(), DriverError>> {
        let message = Message::user_text(text);
        Box::pin(async move {
            let agent = self.agent().await?;
            agent.steer(message).map_err(DriverError::failed)
        })
    }

    fn follow_up(&self, text: &str) -> BoxFuture<'_, Result<(), DriverError>> {
        let message = Message::user_text(text);
        Box::pin(async move {
            let agent = self.agent().await?;
            agent.followup(message).map_err(DriverError::failed)
        })
    }

    fn cancel(&self) -> Result<(), DriverError> {
        self.stop_shell();
        match self.live_agent() {
            Some(agent) => agent
                .cancel(AgentCancelCause::User, CancelOptions::keep_inbox())
                .map_err(DriverError::failed),
            None => Ok(()),
        }
    }

    fn send_queued(&self) -> Result<(), DriverError> {
        let Some(agent) = self.live_agent() else {
            return Ok(());
        };
        // Nothing wakes an idle agent but a waking send, so the parked items are taken out
        // and sent again, follow-ups first, each list in its order.
        let inbox = agent.inbox();
        let follow_ups = inbox.next_turn();
        let steering = inbox.next_step();
        for message in follow_ups.iter().chain(&steering) {
            inbox.remove(&message.id).map_err(DriverError::failed)?;
        }
        for message in follow_ups {
            agent
                .followup((*message).clone())
                .map_err(DriverError::failed)?;
        }
        for message in steering {
            agent
                .steer((*message).clone())
                .map_err(DriverError::failed)?;
        }
        Ok(())
    }

    fn model(&self) -> CurrentModel {
        let settings = self.runtime.settings();
        let (provider, model) = match self.selection.current() {
            Some(chosen) => (chosen.provider, chosen.model),
            None => (
                settings.model.provider.value.clone(),
                settings.model.model.value.clone(),
            ),
        };
        let catalog: Vec<String> = settings
            .provider(&provider)
            .map(|p| p.models.iter().map(|m| m.value.id.clone()).collect())
            .unwrap_or_default();
        let windows = self.catalog_windows(&provider, &catalog);
        CurrentModel {
            provider,
            model,
            catalog,
            windows,
        }
    }

    fn set_model(&self, model: &str) -> Result<String, DriverError> {
        let provider = self.model().provider;
        let known = self
            .runtime
            .settings()
            .provider(&provider)
            .is_some_and(|p| p.models.iter().any(|m| m.value.id == model));
        self.selection.set(Some(ModelSelection {
            provider: provider.clone(),
            model: model.to_owned(),
            reasoning_effort: None,
        }));
        let mut note = format!("model: {model} ({provider}) from the next step");
        if !known {
            note.push_str(&format!(
                "; it is not in the {provider} catalog, so the provider decides whether it exists"
            ));
        }
        Ok(note)
    }

    fn permission(&self) -> PermissionPreset {
        let (live, pending) = {
            let current = self.current();
            (
                current.live.as_ref().map(|l| l.agent().clone()),
                current.preset,
            )
        };
        live.and_then(|agent| current_preset(&fold_session_safety(&agent.session().events())))
            .or(pending)
            .unwrap_or_else(|| default_preset(self.runtime.settings()))
    }

    fn set_permission(
        &self,
        preset: PermissionPreset,
    ) -> BoxFuture<'_, Result<String, DriverError>> {
        Box::pin(async move {
            let summary = format!(
                "permission: {} (sandbox {}, approval {})",
                preset.as_str(),
                preset.sandbox_mode().as_str(),
                preset.approval_policy()
            );
            let Some(agent) = self.live_agent() else {
                self.current().preset = Some(preset);
                return Ok(format!("{summary}; applies from the first prompt"));
            };
            self.ensure_idle()?;
            self.switch_preset(&agent, preset)?;
            Ok(match self.pinned_sandbox() {
                Some(pinned) if pinned != preset.sandbox_mode() => format!(
                    "{summary}; but this run pins the sandbox to {} (--sandbox or \
                     DSH_PERMISSION_MODE), so it stays in force",
                    pinned.as_str()
                ),
                _ => summary,
            })
        })
    }

    fn list_agents(&self) -> Vec<AgentListing> {
        let Some(subagents) = self.runtime.subagents() else {
            return Vec::new();
        };
        let root = self.current().id.clone();
        let mut out = Vec::new();
        // Depth first, each child followed by its own; a visited set guards the walk.
        let mut stack: Vec<(dsh_subagents::ChildSnapshot, u64)> = subagents
            .children(&root)
            .into_iter()
            .rev()
            .map(|child| (child, 1))
            .collect();
        let mut seen = std::collections::HashSet::new();
        while let Some((child, depth)) = stack.pop() {
            if !seen.insert(child.id.clone()) {
                continue;
            }
            stack.extend(
                subagents
                    .children(&child.id)
                    .into_iter()
                    .rev()
                    .map(|grandchild| (grandchild, depth + 1)),
            );
            out.push(AgentListing {
                status: AgentListing::status_of(&child),
                id: child.id,
                depth,
                label: child.label,
            });
        }
        out
    }

    fn agent_transcript(&self, id: &str) -> BoxFuture<'_, Result<AgentTranscript, DriverError>> {
        let query = id.to_owned();
        Box::pin(async move {
            let listed = self.list_agents();
            let matches: Vec<&AgentListing> = listed
                .iter()
                .filter(|a| a.id.as_str() == query)
                .chain(
                    listed
                        .iter()
                        .filter(|a| a.id.as_str() != query && a.id.as_str().starts_with(&query)),
                )
                .collect();
            let child = match matches.as_slice() {
                [] => {
                    return Err(DriverError::Failed(format!(
                        "no subagent {query} below this session; /agents lists them"
                    )))
                }
                [one, ..] if one.id.as_str() == query => *one,
                [one] => *one,
                _ => {
                    return Err(DriverError::Failed(format!(
                        "{query} names {} subagents; give more of the id",
                        matches.len()
                    )))
                }
            };
            // A child this process holds: its log as it is now. Otherwise the stored log,
            // read (never resumed or written).
            let live = self
                .runtime
                .ctx()
                .get::<dsh_agent::AgentRegistry>()
                .and_then(|registry| registry.get(&child.id));
            let (seed, events) = match live {
                Some(agent) => (
                    agent.session().header().seed_length,
                    agent.session().events().to_vec(),
                ),
                None => {
                    let stored = self
                        .persistence()?
                        .load(&child.id)
                        .map_err(DriverError::failed)?;
                    (stored.header.seed_length, stored.events)
                }
            };
            let seeded = usize::try_from(seed.unwrap_or(0))
                .unwrap_or(usize::MAX)
                .min(events.len());
            Ok(AgentTranscript {
                id: child.id.clone(),
                label: child.label.clone(),
                events: events[seeded..].to_vec(),
                seeded,
            })
        })
    }

    fn list_sessions(&self) -> BoxFuture<'_, Result<Vec<SessionListing>, DriverError>> {
        Box::pin(async move {
            let persistence = self.persistence()?;
            let summaries = sessions_of(&*persistence, self.runtime.workspace())
                .map_err(DriverError::failed)?;
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
            Ok(summaries
                .into_iter()
                .map(|s| SessionListing {
                    id: SessionId::new(s.id),
                    updated: crate::tui::picker::age(now, s.updated_at),
                    title: s.title.unwrap_or_else(|| "(no prompt)".into()),
                    turns: s.turns,
                    outcome: s.last_outcome,
                })
                .collect())
        })
    }

    fn resume(&self, query: &str) -> BoxFuture<'_, Result<OpenedSession, DriverError>> {
        let query = query.to_owned();
        Box::pin(async move {
            self.ensure_idle()?;
            let persistence = self.persistence()?;
            let summary = find_session(&*persistence, &query).map_err(DriverError::failed)?;
            let id = SessionId::new(summary.id);
            if id == self.current().id {
                return Err(DriverError::Failed(format!("session {id} is already open")));
            }
            self.reopen(id, OpenedHow::Resumed).await
        })
    }

    fn fork(&self) -> BoxFuture<'_, Result<OpenedSession, DriverError>> {
        Box::pin(async move {
            self.ensure_idle()?;
            let Some(agent) = self.live_agent() else {
                return Err(DriverError::Failed(
                    "nothing to fork yet: this session has no prompt".into(),
                ));
            };
            let persistence = self.persistence()?;
            let parent = agent.id().clone();
            self.runtime
                .sessions()
                .flush(agent.session())
                .await
                .map_err(DriverError::failed)?;
            drop(agent);
            let child = Runtime::new_session_id();
            dsh_store::fork_stored(&*persistence, &parent, None, child.clone())
                .map_err(DriverError::failed)?;
            self.reopen(child, OpenedHow::Forked { parent }).await
        })
    }

    fn search_sessions(&self, query: &str) -> Result<(), DriverError> {
        self.start_search(query)
    }

    fn fork_at(&self, id: &str, seq: u64) -> BoxFuture<'_, Result<OpenedSession, DriverError>> {
        let id = id.to_owned();
        Box::pin(async move { self.fork_from_hit(&id, seq).await })
    }

    fn new_session(&self) -> BoxFuture<'_, Result<OpenedSession, DriverError>> {
        Box::pin(async move {
            self.ensure_idle()?;
            let id = Runtime::new_session_id();
            self.switch(id.clone(), None).await;
            Ok(self.opened(id, OpenedHow::New, Vec::new()))
        })
    }

    fn context(&self) -> BoxFuture<'_, Option<ContextFill>> {
        Box::pin(async move {
            let resolved = self.model_window().await;
            let window = resolved.map(|(window, _)| window);
            let window_guessed = resolved.is_some_and(|(_, guessed)| guessed);
            let Some(agent) = self.live_agent() else {
                // Nothing is sent before the first prompt starts the agent.
                return window.map(|window| ContextFill {
                    tokens: 0,
                    window: Some(window),
                    window_guessed,
                });
            };
            let meter = agent.ctx().get::<MeterService>()?;
            match meter.measure(agent.session()) {
                Ok(measurement) => Some(ContextFill {
                    tokens: measurement.total_tokens,
                    window,
                    window_guessed,
                }),
                Err(error) => {
                    tracing::debug!(%error, "the token meter cannot measure this session");
                    None
                }
            }
        })
    }

    fn compact(&self) -> Result<(), DriverError> {
        let Some(agent) = self.live_agent() else {
            // No prompt yet, so no agent and no history.
            let none = dsh_compaction::result_message(None);
            let _ = self.inputs.send(Input::Compacted(Ok(none)));
            return Ok(());
        };
        let engine = agent.ctx().get::<CompactionEngine>().ok_or_else(|| {
            DriverError::Unsupported("compaction is not configured in this composition".into())
        })?;
        let inputs = self.inputs.clone();
        // The summary takes a model call; the UI keeps running meanwhile, and Esc (the
        // agent's cancel) aborts the maintenance the attempt runs in.
        tokio::spawn(async move {
            let outcome = engine.compact_now(&agent, AbortSignal::new(), None).await;
            let text = match outcome {
                Ok(result) => Ok(dsh_compaction::result_message(result.as_ref())),
                Err(error) => {
                    tracing::debug!(code = error.code(), %error, "manual compaction did not compact");
                    Err(error.user_message().to_owned())
                }
            };
            let _ = inputs.send(Input::Compacted(text));
        });
        Ok(())
    }

    fn history_file(&self) -> Option<HistoryFile> {
        Some(HistoryFile::in_home(&self.runtime.settings().home.value))
    }

    fn workspace(&self) -> Option<std::path::PathBuf> {
        Some(self.runtime.workspace().to_path_buf())
    }

    fn shell(&self, command: &str) -> Result<(), DriverError> {
        self.start_shell(command)
    }

    fn rewind(&self) -> BoxFuture<'_, Result<(OpenedSession, String), DriverError>> {
        Box::pin(self.rewind_session())
    }

    fn set_plan(&self, on: Option<bool>) -> BoxFuture<'_, Result<String, DriverError>> {
        Box::pin(async move {
            let agent = self.agent().await?;
            crate::commands::plan_ui::set_plan(&self.runtime, agent.as_ref(), on)
        })
    }

    fn question_slots(&self) -> Option<crate::tui::interactive::QuestionSlots> {
        Some(self.questions.clone())
    }

    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.stop_shell();
            let live = self.current().live.take();
            if let Some(live) = live {
                live.close().await;
            }
        })
    }
}
