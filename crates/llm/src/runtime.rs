//! The `LlmRuntime` service: adapter registry, call preparation and the `llm/stream` chain.

use crate::adapter::{ChunkStream, LlmAdapter, LlmRequest, Modality, ModelInfo};
use crate::boundary::{guarded, project_request};
use crate::error::LlmError;
use crate::events::{AdaptersUpdated, AdaptersUpdatedPayload, LlmStream};
use crate::retry::ResolvedRetryPolicy;
use dsh_kernel::{BoxError, Context, Disposer};
use dsh_protocol::{codes, AdapterDefaults, LlmCallConfig};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use tokio_util::sync::CancellationToken;

/// Code for a provider route that another registration already serves.
pub const DUPLICATE_ROUTE: &str = "DUPLICATE_ROUTE";

/// One adapter registration: the adapter, its retry policy and the routes it serves.
struct Registration {
    id: u64,
    adapter: Arc<dyn LlmAdapter>,
    retry_policy: ResolvedRetryPolicy,
    disposed: AtomicBool,
}

impl Registration {
    fn same_adapter(&self, other: &Registration) -> bool {
        // Compare data pointers only: two `Arc<dyn _>` to one object may carry different
        // vtable pointers across codegen units.
        std::ptr::addr_eq(Arc::as_ptr(&self.adapter), Arc::as_ptr(&other.adapter))
    }
}

/// The route table, shared with registration handles and effect undos.
#[derive(Default)]
struct Routes {
    by_route: BTreeMap<String, Arc<Registration>>,
}

struct Shared {
    routes: Mutex<Routes>,
    next_id: AtomicU64,
    ctx: Context,
}

impl Shared {
    fn routes(&self) -> MutexGuard<'_, Routes> {
        // The table holds no invariant a panicking holder could break halfway.
        self.routes.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn lookup(&self, route: &str) -> Option<Arc<Registration>> {
        self.routes().by_route.get(route).cloned()
    }

    fn notify(&self) {
        let routes = self.routes().by_route.keys().cloned().collect();
        self.ctx
            .emit::<AdaptersUpdated>(None, &AdaptersUpdatedPayload { routes });
    }

    /// Removes every route of registration `id`; true when anything was removed.
    fn remove(&self, id: u64) -> bool {
        let mut table = self.routes();
        let before = table.by_route.len();
        table.by_route.retain(|_, r| r.id != id);
        table.by_route.len() != before
    }
}

/// The model layer's service (`ctx.llm` in the original): adapters register here under
/// provider routes, and the loop prepares and streams every model call through it.
pub struct LlmRuntime {
    shared: Arc<Shared>,
}

impl LlmRuntime {
    /// A runtime dispatching its events on `ctx`'s kernel.
    pub fn new(ctx: &Context) -> Self {
        Self {
            shared: Arc::new(Shared {
                routes: Mutex::new(Routes::default()),
                next_id: AtomicU64::new(1),
                ctx: ctx.clone(),
            }),
        }
    }

    /// Creates a runtime and provides it as a service of `ctx`'s fiber.
    pub fn install(ctx: &Context) -> Result<Arc<Self>, BoxError> {
        let runtime = Arc::new(Self::new(ctx));
        ctx.provide(runtime.clone())?.forget();
        Ok(runtime)
    }

    /// The provider routes currently served, sorted.
    pub fn routes(&self) -> Vec<String> {
        self.shared.routes().by_route.keys().cloned().collect()
    }

    /// Registers `adapter` for `routes`, owned by `owner`'s fiber: the registration goes away
    /// when the handle is disposed or the owner unloads. A route already served by another
    /// registration is refused (`DUPLICATE_ROUTE`), and nothing is registered then.
    pub fn register_adapter(
        &self,
        owner: &Context,
        routes: impl IntoIterator<Item = impl Into<String>>,
        adapter: Arc<dyn LlmAdapter>,
        retry_policy: ResolvedRetryPolicy,
    ) -> Result<AdapterHandle, LlmError> {
        let routes: Vec<String> = routes.into_iter().map(Into::into).collect();
        let registration = Arc::new(Registration {
            id: self.shared.next_id.fetch_add(1, Ordering::Relaxed),
            adapter,
            retry_policy,
            disposed: AtomicBool::new(false),
        });
        install_routes(&self.shared, &registration, &routes)?;
        let weak = Arc::downgrade(&self.shared);
        let undo_registration = registration.clone();
        let disposer = owner.effect("llm adapter registration", move || {
            undo_registration.disposed.store(true, Ordering::SeqCst);
            if let Some(shared) = weak.upgrade() {
                if shared.remove(undo_registration.id) {
                    shared.notify();
                }
            }
        });
        let disposer = match disposer {
            Ok(disposer) => disposer,
            Err(error) => {
                self.shared.remove(registration.id);
                return Err(
                    LlmError::new(codes::REGISTRATION_DISPOSED, error.to_string())
                        .with_source(error),
                );
            }
        };
        self.shared.notify();
        Ok(AdapterHandle {
            shared: self.shared.clone(),
            registration,
            disposer,
        })
    }

    /// Resolves `config` against its adapter's model facts and returns a one-shot call handle.
    ///
    /// Unset `max_tokens` and `reasoning_effort` are filled with the model's defaults and
    /// marked in [`PreparedCall::adapter_defaults`], so a later request can tell inherited
    /// defaults from explicit choices. Errors: `NO_ADAPTER`, `INVALID_MODEL_ID`,
    /// `INVALID_MODEL_MAX_TOKENS`, `UNSUPPORTED_REASONING_EFFORT`, `ABORTED`, or whatever the
    /// adapter's model resolution reports.
    pub async fn prepare_call(
        &self,
        config: LlmCallConfig,
        cancel: &CancellationToken,
    ) -> Result<PreparedCall, LlmError> {
        let registration = self.shared.lookup(&config.provider).ok_or_else(|| {
            LlmError::new(
                codes::NO_ADAPTER,
                format!("no model adapter serves provider '{}'", config.provider),
            )
        })?;
        if config.model.trim().is_empty() {
            return Err(LlmError::new(codes::INVALID_MODEL_ID, "model id is empty"));
        }
        let info = tokio::select! {
            biased;
            () = cancel.cancelled() => {
                return Err(LlmError::new(codes::ABORTED, "model call preparation was cancelled"))
            }
            info = registration.adapter.resolve_model(&config) => info?,
        };
        let (config, adapter_defaults) = materialize(config, &info)?;
        Ok(PreparedCall {
            shared: self.shared.clone(),
            registration,
            config,
            adapter_defaults,
            context_window: info.context_window,
            input_modalities: info.input_modalities,
            used: AtomicBool::new(false),
        })
    }

    /// Streams `request` through the `llm/stream` chain without preparation; the adapter is
    /// looked up, and the model resolved, at the innermost step.
    ///
    /// Only middleware errors come back as `Err`; any adapter selection, dispatch or stream
    /// failure arrives as the stream's terminal `finish` chunk.
    pub async fn stream(&self, request: Arc<LlmRequest>) -> Result<ChunkStream, LlmError> {
        let shared = self.shared.clone();
        let default = move |request: Arc<LlmRequest>| async move {
            let cancel = request.cancel.clone();
            let dispatch = async move {
                let route = &request.config.provider;
                let registration = shared.lookup(route).ok_or_else(|| {
                    LlmError::new(
                        codes::NO_ADAPTER,
                        format!("no model adapter serves provider '{route}'"),
                    )
                })?;
                let info = registration.adapter.resolve_model(&request.config).await?;
                dispatch(&shared, &registration, info.accepts_images(), request).await
            };
            Ok::<_, BoxError>(guarded(dispatch, cancel).await)
        };
        run_chain(&self.shared.ctx, request, default).await
    }
}

/// Applies model defaults and checks explicit choices.
fn materialize(
    mut config: LlmCallConfig,
    info: &ModelInfo,
) -> Result<(LlmCallConfig, AdapterDefaults), LlmError> {
    let mut defaults = AdapterDefaults::default();
    match (&config.reasoning_effort, &info.reasoning) {
        (Some(effort), Some(reasoning)) if reasoning.efforts.contains(effort) => {}
        (Some(effort), reasoning) => {
            let supported = reasoning
                .as_ref()
                .map(|r| r.efforts.join(", "))
                .unwrap_or_default();
            return Err(LlmError::new(
                codes::UNSUPPORTED_REASONING_EFFORT,
                format!(
                    "model '{}' does not support reasoning effort '{effort}' (supported: [{supported}])",
                    config.model
                ),
            ));
        }
        (None, Some(reasoning)) => {
            if let Some(default) = &reasoning.default_effort {
                config.reasoning_effort = Some(default.clone());
                defaults.reasoning_effort = true;
            }
        }
        (None, None) => {}
    }
    match config.max_tokens {
        Some(max) => {
            let cap = info.max_output_tokens.unwrap_or(u64::MAX);
            if max == 0 || max > cap {
                return Err(LlmError::new(
                    codes::INVALID_MODEL_MAX_TOKENS,
                    format!(
                        "maxTokens {max} is outside 1..={cap} for model '{}'",
                        config.model
                    ),
                ));
            }
        }
        None => {
            if let Some(default) = info.default_max_tokens {
                config.max_tokens = Some(default);
                defaults.max_tokens = true;
            }
        }
    }
    Ok((config, defaults))
}

/// Adds `routes` for `registration`, all or nothing.
fn install_routes(
    shared: &Shared,
    registration: &Arc<Registration>,
    routes: &[String],
) -> Result<(), LlmError> {
    let mut table = shared.routes();
    let mut seen = std::collections::BTreeSet::new();
    for route in routes {
        let taken = table
            .by_route
            .get(route)
            .is_some_and(|r| r.id != registration.id);
        if taken || !seen.insert(route.as_str()) {
            return Err(LlmError::new(
                DUPLICATE_ROUTE,
                format!("provider route '{route}' is already registered"),
            ));
        }
        if route.is_empty() {
            return Err(LlmError::new(
                codes::INVALID_REQUEST,
                "provider route must not be empty",
            ));
        }
    }
    table.by_route.retain(|_, r| r.id != registration.id);
    for route in routes {
        table.by_route.insert(route.clone(), registration.clone());
    }
    Ok(())
}

/// Projects `request` for `registration`'s adapter and starts the call.
async fn dispatch(
    shared: &Shared,
    registration: &Arc<Registration>,
    accepts_images: bool,
    request: Arc<LlmRequest>,
) -> Result<ChunkStream, LlmError> {
    if registration.disposed.load(Ordering::SeqCst) {
        return Err(LlmError::new(
            codes::REGISTRATION_DISPOSED,
            "the adapter registration was disposed before the call was dispatched",
        ));
    }
    let request = project_request(
        request,
        |provider| {
            shared
                .lookup(provider)
                .is_some_and(|other| other.same_adapter(registration))
        },
        accepts_images,
    );
    registration.adapter.stream(request).await
}

/// Runs the `llm/stream` waterfall with `default` innermost; middleware errors come back as
/// [`LlmError`]s (an `LlmError` thrown by middleware keeps its code).
async fn run_chain<D, DFut>(
    ctx: &Context,
    request: Arc<LlmRequest>,
    default: D,
) -> Result<ChunkStream, LlmError>
where
    D: FnOnce(Arc<LlmRequest>) -> DFut + Send + 'static,
    DFut: std::future::Future<Output = Result<ChunkStream, BoxError>> + Send + 'static,
{
    ctx.waterfall::<LlmStream, _, _>(None, request, default)
        .await
        .map_err(LlmError::from_boxed)
}

/// The handle of one adapter registration.
pub struct AdapterHandle {
    shared: Arc<Shared>,
    registration: Arc<Registration>,
    disposer: Disposer,
}

impl AdapterHandle {
    /// Removes the registration (idempotent).
    pub fn dispose(&self) {
        self.disposer.dispose();
    }

    /// Atomically swaps the routes this registration serves. Fails without changing anything
    /// when a new route belongs to another registration (`DUPLICATE_ROUTE`) or the
    /// registration was disposed (`REGISTRATION_DISPOSED`).
    pub fn replace(
        &self,
        routes: impl IntoIterator<Item = impl Into<String>>,
    ) -> Result<(), LlmError> {
        let routes: Vec<String> = routes.into_iter().map(Into::into).collect();
        if self.registration.disposed.load(Ordering::SeqCst) {
            return Err(LlmError::new(
                codes::REGISTRATION_DISPOSED,
                "the adapter registration was disposed",
            ));
        }
        install_routes(&self.shared, &self.registration, &routes)?;
        self.shared.notify();
        Ok(())
    }

    /// The routes this registration serves now, sorted.
    pub fn routes(&self) -> Vec<String> {
        let table = self.shared.routes();
        table
            .by_route
            .iter()
            .filter(|(_, r)| r.id == self.registration.id)
            .map(|(route, _)| route.clone())
            .collect()
    }

    /// The registration's retry policy.
    pub fn retry_policy(&self) -> &ResolvedRetryPolicy {
        &self.registration.retry_policy
    }
}

/// A resolved, validated model call that may be streamed once.
pub struct PreparedCall {
    shared: Arc<Shared>,
    registration: Arc<Registration>,
    config: LlmCallConfig,
    adapter_defaults: AdapterDefaults,
    context_window: Option<u64>,
    input_modalities: Vec<Modality>,
    used: AtomicBool,
}

impl PreparedCall {
    /// The config with adapter defaults filled in; requests must carry exactly this.
    pub fn config(&self) -> &LlmCallConfig {
        &self.config
    }

    /// Which fields of [`Self::config`] the adapter filled in.
    pub fn adapter_defaults(&self) -> AdapterDefaults {
        self.adapter_defaults
    }

    /// The retry policy of the adapter registration serving this call.
    pub fn retry_policy(&self) -> &ResolvedRetryPolicy {
        &self.registration.retry_policy
    }

    /// The model's context window, when known.
    pub fn context_window(&self) -> Option<u64> {
        self.context_window
    }

    /// The input kinds the model accepts.
    pub fn input_modalities(&self) -> &[Modality] {
        &self.input_modalities
    }

    /// Streams `request` through `llm/stream` to the prepared adapter. Allowed once, and only
    /// for a request whose config equals [`Self::config`] (`INVALID_PREPARED_CALL`).
    pub async fn stream(&self, request: Arc<LlmRequest>) -> Result<ChunkStream, LlmError> {
        if request.config != self.config {
            return Err(LlmError::new(
                codes::INVALID_PREPARED_CALL,
                "the request's call config differs from the prepared one",
            ));
        }
        if self.used.swap(true, Ordering::SeqCst) {
            return Err(LlmError::new(
                codes::INVALID_PREPARED_CALL,
                "a prepared call can be streamed only once",
            ));
        }
        let shared = self.shared.clone();
        let registration = self.registration.clone();
        let accepts_images = self.input_modalities.contains(&Modality::Image);
        let default = move |request: Arc<LlmRequest>| async move {
            let cancel = request.cancel.clone();
            let dispatch =
                async move { dispatch(&shared, &registration, accepts_images, request).await };
            Ok::<_, BoxError>(guarded(dispatch, cancel).await)
        };
        run_chain(&self.shared.ctx, request, default).await
    }
}
