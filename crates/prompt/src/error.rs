use std::fmt;

/// Which kind of prompt part an error is about, so a message can say where to look.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PartKind {
    /// A system-prompt section.
    Section,
    /// A runtime-context entry (rendered into a user-message snapshot).
    Context,
    /// A prompt variable.
    Variable,
}

impl fmt::Display for PartKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Section => "section",
            Self::Context => "context",
            Self::Variable => "variable",
        })
    }
}

/// Everything that can go wrong while registering, assembling or rendering a prompt.
///
/// Failing loudly is deliberate: a prompt that silently lost a variable or a tool would
/// mislead the model for a whole session, which is worse than one failed turn.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PromptError {
    /// A `{{...}}` group that is not a simple `{{name}}` reference, or a `{{` followed later
    /// by a `}}` that does not close a group.
    #[error("malformed prompt variable reference {reference:?} in {kind} {owner:?} (references are simple {{{{name}}}} groups with names matching ^[a-z][a-z0-9_]*$)")]
    MalformedReference {
        kind: PartKind,
        owner: String,
        reference: String,
    },
    /// A well-formed reference to a variable nobody registered.
    #[error("unknown prompt variable {{{{{name}}}}} in {kind} {owner:?}; registered variables: {registered:?}")]
    UnknownVariable {
        kind: PartKind,
        owner: String,
        name: String,
        registered: Vec<String>,
    },
    /// A registered variable whose provider had no value for this assembly.
    #[error("prompt variable {{{{{name}}}}} referenced in {kind} {owner:?} has no value for this assembly")]
    MissingValue {
        kind: PartKind,
        owner: String,
        name: String,
    },
    /// A variable registration whose name does not match `^[a-z][a-z0-9_]*$`.
    #[error("invalid prompt variable name {name:?} (names match ^[a-z][a-z0-9_]*$)")]
    InvalidVariableName { name: String },
    /// A section or context registration with an empty name.
    #[error("a prompt {kind} needs a non-empty name")]
    EmptyName { kind: PartKind },
    /// A section or context whose order is NaN or infinite, which would make sorting
    /// meaningless.
    #[error("prompt {kind} {name:?} has a non-finite order {order}")]
    NonFiniteOrder {
        kind: PartKind,
        name: String,
        order: f64,
    },
    /// A second registration of the same name in the same scope layer.
    #[error("prompt {kind} {name:?} is already registered in this scope")]
    DuplicateName { kind: PartKind, name: String },
    /// More than one section claiming to be the whole prompt.
    #[error("more than one complete prompt section is in effect: {names:?}")]
    MultipleCompleteSections { names: Vec<String> },
    /// A tool provider used the reserved `<unlisted-tools>` marker as a tool name.
    #[error("tool name {name:?} is reserved for the tool-order rest marker")]
    ReservedToolName { name: String },
    /// The configured tool order names a tool that no provider knows.
    #[error("tool order lists unknown tool {name:?}; known tools: {known:?}")]
    UnknownOrderedTool { name: String, known: Vec<String> },
    /// The configured tool order is itself malformed (duplicates, missing rest marker).
    #[error("invalid tool order: {reason}")]
    InvalidToolOrder { reason: String },
    /// The kernel refused a registration (for example, the owning fiber is disposed).
    #[error(transparent)]
    Kernel(#[from] dsh_kernel::KernelError),
    /// A `system-prompt/assemble` listener failed.
    #[error("system-prompt/assemble listener failed: {0}")]
    Listener(#[source] dsh_kernel::BoxError),
}

impl PromptError {
    /// A stable machine-readable code for this error.
    pub fn code(&self) -> &'static str {
        match self {
            Self::MalformedReference { .. } => "PROMPT_MALFORMED_REFERENCE",
            Self::UnknownVariable { .. } => "PROMPT_UNKNOWN_VARIABLE",
            Self::MissingValue { .. } => "PROMPT_MISSING_VALUE",
            Self::InvalidVariableName { .. } => "PROMPT_INVALID_VARIABLE_NAME",
            Self::EmptyName { .. } => "PROMPT_EMPTY_NAME",
            Self::NonFiniteOrder { .. } => "PROMPT_NON_FINITE_ORDER",
            Self::DuplicateName { .. } => "PROMPT_DUPLICATE_NAME",
            Self::MultipleCompleteSections { .. } => "PROMPT_MULTIPLE_COMPLETE_SECTIONS",
            Self::ReservedToolName { .. } => "PROMPT_RESERVED_TOOL_NAME",
            Self::UnknownOrderedTool { .. } => "PROMPT_UNKNOWN_ORDERED_TOOL",
            Self::InvalidToolOrder { .. } => "PROMPT_INVALID_TOOL_ORDER",
            Self::Kernel(error) => error.code(),
            Self::Listener(_) => "PROMPT_LISTENER_FAILED",
        }
    }
}
