//! Widgets over the transcript: the scrolling conversation and the status line.

use super::cost::Prices;
use super::lines::transcript_lines;
use super::text::{compact_count, truncate};
use super::transcript::{Entry, RunState, ToolState, Transcript};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;

/// The newest part of the transcript that fits the area, bottom-aligned like a terminal.
#[derive(Clone, Copy, Debug)]
pub struct TranscriptView<'a> {
    transcript: &'a Transcript,
}

impl<'a> TranscriptView<'a> {
    pub fn new(transcript: &'a Transcript) -> Self {
        Self { transcript }
    }
}

impl Widget for TranscriptView<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        if area.is_empty() {
            return;
        }
        let lines = transcript_lines(self.transcript, area.width);
        let shown = lines.len().min(usize::from(area.height));
        let top = area.bottom() - u16::try_from(shown).unwrap_or(area.height);
        for (i, line) in lines[lines.len() - shown..].iter().enumerate() {
            let y = top + u16::try_from(i).unwrap_or(0);
            buf.set_line(area.x, y, line, area.width);
        }
    }
}

/// One line: what the agent is doing (first, so a narrow terminal never cuts it), the
/// model, token usage and context fill.
#[derive(Clone, Copy, Debug)]
pub struct StatusLine<'a> {
    transcript: &'a Transcript,
    note: Option<&'a str>,
    jobs: usize,
    agents: usize,
    queued: usize,
    permission: Option<&'a str>,
    prices: Option<&'a Prices>,
}

impl<'a> StatusLine<'a> {
    pub fn new(transcript: &'a Transcript) -> Self {
        Self {
            transcript,
            note: None,
            jobs: 0,
            agents: 0,
            queued: 0,
            permission: None,
            prices: None,
        }
    }

    /// Shows the session's cost after the tokens, for the models `prices` has (nothing
    /// when it has none of the models used).
    pub fn prices(mut self, prices: &'a Prices) -> Self {
        self.prices = Some(prices);
        self
    }

    /// Shows `count` messages waiting for the agent (`2 queued`).
    pub fn queued(mut self, count: usize) -> Self {
        self.queued = count;
        self
    }

    /// Shows the session's permission preset (`workspace-write`) after the context fill.
    pub fn permission(mut self, preset: Option<&'a str>) -> Self {
        self.permission = preset;
        self
    }

    /// Shows `count` live background jobs (`1 job`, `3 jobs`) after the run state.
    pub fn jobs(mut self, count: usize) -> Self {
        self.jobs = count;
        self
    }

    /// Shows `count` working subagents (`1 agent`, `2 agents`) before the jobs.
    pub fn agents(mut self, count: usize) -> Self {
        self.agents = count;
        self
    }

    /// Replaces the run state with a note of the UI's own (`waiting for approval`).
    pub fn note(mut self, note: &'a str) -> Self {
        self.note = Some(note);
        self
    }

    /// The status as plain text.
    pub fn text(&self) -> String {
        let t = self.transcript;
        let mut parts = Vec::new();
        parts.push(match self.note {
            Some(note) => note.to_owned(),
            None => match t.run_state() {
                RunState::Idle => "idle".to_owned(),
                RunState::Running { turn, step: None } => format!("running · turn {turn}"),
                RunState::Running {
                    turn,
                    step: Some(step),
                } => format!("running · turn {turn} step {step}"),
                RunState::Retrying {
                    retry,
                    max_retries: Some(max),
                    ..
                } => format!("retrying ({retry} of {max})"),
                RunState::Retrying {
                    retry,
                    max_retries: None,
                    ..
                } => format!("retrying ({retry})"),
            },
        });
        if self.note.is_none() && t.run_state() != RunState::Idle {
            if let Some(activity) = activity(t) {
                parts.push(activity);
            }
        }
        let mut work = Vec::new();
        match self.agents {
            0 => {}
            1 => work.push("1 agent".to_owned()),
            n => work.push(format!("{n} agents")),
        }
        match self.jobs {
            0 => {}
            1 => work.push("1 job".to_owned()),
            n => work.push(format!("{n} jobs")),
        }
        if self.queued > 0 {
            work.push(format!("{} queued", self.queued));
        }
        if !work.is_empty() {
            parts.push(work.join(" · "));
        }
        parts.push(match (t.model(), t.provider()) {
            (Some(model), Some(provider)) => format!("{model} ({provider})"),
            (Some(model), None) => model.to_owned(),
            _ => "no model yet".to_owned(),
        });
        let usage = t.usage();
        parts.push(format!(
            "{} in / {} out",
            compact_count(usage.input),
            compact_count(usage.output)
        ));
        let by_model = t.tokens_by_model();
        if let Some(prices) = self.prices {
            if let Some(cost) = prices.cost(by_model.iter().map(|(m, u)| (m.as_str(), u))) {
                parts.push(prices.format(cost));
            }
        }
        let fill = t.context_fill();
        if fill.window.is_some() || fill.tokens > 0 {
            parts.push(fill.status_text());
        }
        if let Some(preset) = self.permission {
            parts.push(preset.to_owned());
        }
        parts.join(" · ")
    }
}

/// What the running turn is doing right now: `thinking`, `writing`, or the tools running.
fn activity(transcript: &Transcript) -> Option<String> {
    let mut running: Vec<&str> = Vec::new();
    for entry in transcript.entries().iter().rev() {
        match entry {
            Entry::Tool(card) if matches!(card.state, ToolState::Running) => {
                running.push(&card.name);
            }
            Entry::Tool(_) => {}
            Entry::Reasoning {
                streaming: true, ..
            } if running.is_empty() => return Some("thinking".into()),
            Entry::Assistant {
                streaming: true, ..
            } if running.is_empty() => return Some("writing".into()),
            _ => break,
        }
    }
    if running.is_empty() {
        return None;
    }
    running.reverse();
    running.dedup();
    Some(format!("running {}", running.join(", ")))
}

impl Widget for StatusLine<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        if area.is_empty() {
            return;
        }
        let text = truncate(&self.text(), usize::from(area.width));
        let style = Style::new().add_modifier(Modifier::REVERSED);
        buf.set_style(Rect { height: 1, ..area }, style);
        buf.set_line(
            area.x,
            area.y,
            &Line::from(Span::styled(text, style)),
            area.width,
        );
    }
}
