//! The approval prompt: asks whether a tool call may run, or, for an escalation, whether one
//! command may run outside its sandbox mode.

use super::text::{truncate, wrap};
use crate::sanitize::sanitize;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Widget};

/// The answers a person can give.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ApprovalChoice {
    AllowOnce,
    /// Allow this kind of call for the rest of the session.
    AllowForSession,
    Deny,
}

impl ApprovalChoice {
    pub const ALL: [ApprovalChoice; 3] = [Self::AllowOnce, Self::AllowForSession, Self::Deny];
    /// For a question whose answer cannot be remembered (an escalation covers one call).
    pub const ONCE: [ApprovalChoice; 2] = [Self::AllowOnce, Self::Deny];

    pub fn label(self) -> &'static str {
        match self {
            Self::AllowOnce => "Allow once",
            Self::AllowForSession => "Allow for this session",
            Self::Deny => "Deny",
        }
    }
}

/// One pending approval question and the highlighted answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApprovalPrompt {
    pub tool: String,
    /// One line describing the call (its command or path).
    pub summary: String,
    /// Why approval is needed, when known.
    pub reason: Option<String>,
    /// What "allow for this session" would remember, when known.
    pub grant: Option<String>,
    /// For an escalation: the wider mode asked for and the model's reason. Such a prompt
    /// offers no "allow for this session".
    pub escalation: Option<EscalationLine>,
    selected: ApprovalChoice,
}

/// What an escalation prompt shows besides the command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EscalationLine {
    /// The sandbox mode the command would run in without approval.
    pub from: String,
    /// The mode it asks for.
    pub to: String,
    pub justification: String,
}

impl ApprovalPrompt {
    /// A prompt with "Allow once" highlighted.
    pub fn new(
        tool: impl Into<String>,
        summary: impl Into<String>,
        reason: Option<String>,
    ) -> Self {
        // The call's command, path and reason may come from the model: shown terminal-safe.
        let clean = |text: String| sanitize(&text).into_owned();
        Self {
            tool: clean(tool.into()),
            summary: clean(summary.into()),
            reason: reason.map(clean),
            grant: None,
            escalation: None,
            selected: ApprovalChoice::AllowOnce,
        }
    }

    /// Makes this an escalation prompt (mode and reason shown, no "allow for this session").
    pub fn set_escalation(&mut self, escalation: EscalationLine) {
        self.escalation = Some(escalation);
        if !self.choices().contains(&self.selected) {
            self.selected = ApprovalChoice::AllowOnce;
        }
    }

    /// The answers this prompt offers, in order.
    pub fn choices(&self) -> &'static [ApprovalChoice] {
        if self.escalation.is_some() {
            &ApprovalChoice::ONCE
        } else {
            &ApprovalChoice::ALL
        }
    }

    /// Names what "allow for this session" covers (shown under the choices).
    pub fn set_grant(&mut self, grant: impl Into<String>) {
        self.grant = Some(sanitize(&grant.into()).into_owned());
    }

    pub fn selected(&self) -> ApprovalChoice {
        self.selected
    }

    /// Highlights `choice`, if this prompt offers it.
    pub fn select(&mut self, choice: ApprovalChoice) {
        if self.choices().contains(&choice) {
            self.selected = choice;
        }
    }

    /// Moves the highlight right, wrapping around.
    pub fn next(&mut self) {
        self.step(1);
    }

    /// Moves the highlight left, wrapping around.
    pub fn previous(&mut self) {
        self.step(self.choices().len() - 1);
    }

    fn step(&mut self, by: usize) {
        let choices = self.choices();
        let at = choices
            .iter()
            .position(|c| *c == self.selected)
            .unwrap_or(0);
        self.selected = choices[(at + by) % choices.len()];
    }

    /// Rows the prompt needs at `width`.
    pub fn height(&self, width: u16) -> u16 {
        u16::try_from(self.body(width).len() + 2).unwrap_or(u16::MAX)
    }

    fn body(&self, width: u16) -> Vec<Line<'static>> {
        let inner = usize::from(width).saturating_sub(2).max(1);
        let mut lines = vec![Line::from(vec![
            Span::styled(self.tool.clone(), Style::new().add_modifier(Modifier::BOLD)),
            Span::raw("  "),
            Span::raw(truncate(
                &self.summary,
                inner.saturating_sub(self.tool.len() + 2),
            )),
        ])];
        match &self.escalation {
            Some(escalation) => {
                let wants = format!(
                    "run outside the sandbox: {} instead of {}, for this one call",
                    escalation.to, escalation.from
                );
                for row in wrap(&wants, inner) {
                    lines.push(Line::styled(
                        row,
                        Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD),
                    ));
                }
                for row in wrap(&format!("why: {}", escalation.justification), inner) {
                    lines.push(Line::styled(row, Style::new().add_modifier(Modifier::DIM)));
                }
            }
            None => {
                if let Some(reason) = &self.reason {
                    for row in wrap(&format!("why: {reason}"), inner) {
                        lines.push(Line::styled(row, Style::new().add_modifier(Modifier::DIM)));
                    }
                }
            }
        }
        let mut choices = Vec::new();
        for &choice in self.choices() {
            if !choices.is_empty() {
                choices.push(Span::raw("  "));
            }
            if choice == self.selected {
                choices.push(Span::styled(
                    format!("[{}]", choice.label()),
                    Style::new().add_modifier(Modifier::REVERSED | Modifier::BOLD),
                ));
            } else {
                choices.push(Span::raw(format!(" {} ", choice.label())));
            }
        }
        lines.push(Line::from(choices));
        if let (Some(grant), None) = (&self.grant, &self.escalation) {
            lines.push(Line::styled(
                truncate(&format!("a / s / d · this session covers {grant}"), inner),
                Style::new().add_modifier(Modifier::DIM),
            ));
        }
        lines
    }
}

impl Widget for &ApprovalPrompt {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let title = if self.escalation.is_some() {
            " Let this command leave the sandbox? "
        } else {
            " Allow this tool call? "
        };
        let block = Block::new()
            .borders(Borders::ALL)
            .border_style(Style::new().fg(Color::Yellow))
            .title(title);
        let inner = block.inner(area);
        block.render(area, buf);
        for (i, line) in self
            .body(area.width)
            .iter()
            .take(usize::from(inner.height))
            .enumerate()
        {
            let y = inner.y + u16::try_from(i).unwrap_or(0);
            buf.set_line(inner.x, y, line, inner.width);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_highlight_wraps_both_ways() {
        let mut prompt = ApprovalPrompt::new("bash", "rm -rf target", None);
        prompt.previous();
        assert_eq!(prompt.selected(), ApprovalChoice::Deny);
        prompt.next();
        prompt.next();
        assert_eq!(prompt.selected(), ApprovalChoice::AllowForSession);
    }

    #[test]
    fn an_escalation_offers_allow_once_and_deny_only() {
        let mut prompt = ApprovalPrompt::new("bash", "touch ~/x", None);
        prompt.select(ApprovalChoice::AllowForSession);
        prompt.set_escalation(EscalationLine {
            from: "workspace-write".into(),
            to: "danger-full-access".into(),
            justification: "it writes to the home directory".into(),
        });
        assert_eq!(prompt.selected(), ApprovalChoice::AllowOnce);
        prompt.next();
        assert_eq!(prompt.selected(), ApprovalChoice::Deny);
        prompt.next();
        assert_eq!(prompt.selected(), ApprovalChoice::AllowOnce);
        prompt.select(ApprovalChoice::AllowForSession);
        assert_eq!(prompt.selected(), ApprovalChoice::AllowOnce);
    }
}
