//! What plugins register: sections, runtime contexts, variables and tool-schema providers.

use dsh_kernel::ScopeKey;
use dsh_protocol::ToolSchema;
use std::fmt;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// What an assembly is for: the scope whose view of the registrations is assembled (usually
/// an agent's), and the step's cancellation token for providers that do real work.
#[derive(Clone, Debug, Default)]
pub struct AssembleContext {
    /// `None` assembles the global view only.
    pub scope: Option<ScopeKey>,
    pub cancel: CancellationToken,
}

impl AssembleContext {
    pub fn new(scope: Option<ScopeKey>) -> Self {
        Self {
            scope,
            cancel: CancellationToken::new(),
        }
    }

    pub fn with_cancel(mut self, cancel: CancellationToken) -> Self {
        self.cancel = cancel;
        self
    }
}

type TextFn = dyn Fn(&AssembleContext) -> String + Send + Sync;

/// The text of a section or context: fixed, or computed at every assembly.
///
/// Either way the result is a template; `{{name}}` references are resolved when rendering.
#[derive(Clone)]
pub enum PromptText {
    /// Shared: every assembly copies the registered parts, so a fixed text is a count bump.
    Static(Arc<str>),
    Dynamic(Arc<TextFn>),
}

impl PromptText {
    /// Text computed from the assembly context each time the prompt is assembled.
    pub fn dynamic(f: impl Fn(&AssembleContext) -> String + Send + Sync + 'static) -> Self {
        Self::Dynamic(Arc::new(f))
    }

    pub(crate) fn resolve(&self, context: &AssembleContext) -> String {
        match self {
            Self::Static(text) => String::from(&**text),
            Self::Dynamic(f) => f(context),
        }
    }
}

impl fmt::Debug for PromptText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Static(text) => f.debug_tuple("Static").field(text).finish(),
            Self::Dynamic(_) => f.write_str("Dynamic(..)"),
        }
    }
}

impl From<&str> for PromptText {
    fn from(text: &str) -> Self {
        Self::Static(Arc::from(text))
    }
}

impl From<String> for PromptText {
    fn from(text: String) -> Self {
        Self::Static(Arc::from(text))
    }
}

/// A system-prompt section. Sections render in ascending `order`; a same-named section in a
/// nearer scope replaces a farther one wholesale.
#[derive(Clone, Debug)]
pub struct Section {
    pub(crate) name: String,
    pub(crate) order: f64,
    pub(crate) text: PromptText,
    pub(crate) complete: bool,
}

impl Section {
    pub fn new(name: impl Into<String>, order: f64, text: impl Into<PromptText>) -> Self {
        Self {
            name: name.into(),
            order,
            text: text.into(),
            complete: false,
        }
    }

    /// Makes this section the whole system prompt wherever it is in effect (a fixed-prompt
    /// preset, for example). Two complete sections in effect at once are an error.
    pub fn complete(mut self) -> Self {
        self.complete = true;
        self
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn order(&self) -> f64 {
        self.order
    }

    pub fn is_complete(&self) -> bool {
        self.complete
    }
}

/// A runtime-context entry: a fact that changes during a session and therefore reaches the
/// model as a logged user-message snapshot rather than inside the system prompt.
#[derive(Clone, Debug)]
pub struct ContextEntry {
    pub(crate) name: String,
    pub(crate) order: f64,
    pub(crate) text: PromptText,
}

impl ContextEntry {
    pub fn new(name: impl Into<String>, order: f64, text: impl Into<PromptText>) -> Self {
        Self {
            name: name.into(),
            order,
            text: text.into(),
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn order(&self) -> f64 {
        self.order
    }
}

/// What a tool-schema provider offers for one assembly.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ToolProvision {
    /// The schemas the model is shown.
    pub schemas: Vec<ToolSchema>,
    /// Further names the provider knows but does not show here (for example tools hidden in
    /// this scope), so a configured tool order naming them is not mistaken for a typo.
    pub known_names: Vec<String>,
}

impl ToolProvision {
    pub fn new(schemas: Vec<ToolSchema>) -> Self {
        Self {
            schemas,
            known_names: Vec::new(),
        }
    }

    pub fn with_known_names(mut self, names: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.known_names.extend(names.into_iter().map(Into::into));
        self
    }
}

pub(crate) type ToolProvider = Arc<dyn Fn(&AssembleContext) -> ToolProvision + Send + Sync>;
pub(crate) type VariableProvider = Arc<dyn Fn(&AssembleContext) -> Option<String> + Send + Sync>;
