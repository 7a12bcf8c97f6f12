//! `approval`: the kernel plugin that mounts [`Approvals`].

use std::sync::Arc;

use dsh_kernel::{BoxError, Context, Disposer, KernelError, Plugin};
use dsh_session::SessionDisposed;
use dsh_tools::{Approval, ApprovalService, PreExecute, PreExecuteDecision};

use super::controller::{ApprovalSettings, Approvals};

/// Provides [`Approvals`] (and, through it, the `dsh_tools::Approval` service) and installs
/// its `tools/pre-execute` listener. Surfaces attach their answerer afterwards with
/// `ctx.require::<Approvals>()?.set_answerer(..)`.
#[derive(Debug)]
pub struct ApprovalPlugin;

impl Plugin for ApprovalPlugin {
    const NAME: &'static str = "approval";
    type Config = ApprovalSettings;

    fn apply(ctx: &Context, settings: ApprovalSettings) -> Result<(), BoxError> {
        let approvals = Arc::new(Approvals::new(settings));
        ctx.provide(approvals.clone())?.forget();
        let service: Arc<dyn ApprovalService> = approvals.clone();
        ctx.provide(Arc::new(Approval::from_arc(service)))?.forget();
        install_pre_execute(ctx, approvals.clone())?.forget();
        let weak = Arc::downgrade(&approvals);
        ctx.on::<SessionDisposed>(move |session| {
            if let Some(approvals) = weak.upgrade() {
                approvals.forget(session.id());
            }
            Ok(())
        })?
        .forget();
        Ok(())
    }
}

/// Registers the `tools/pre-execute` listener through `ctx` (an effect of its fiber). A deny
/// from policy vetoes at once; otherwise inner listeners (hooks) run, and a deny or ask from
/// them wins over this listener's allow (an ask is refused under `never`).
pub fn install_pre_execute(
    ctx: &Context,
    approvals: Arc<Approvals>,
) -> Result<Disposer, KernelError> {
    ctx.on_waterfall::<PreExecute, _, _>(move |args, next| {
        let mine = approvals.check(&args.exec);
        let approvals = approvals.clone();
        async move {
            if matches!(mine, PreExecuteDecision::Deny { .. }) {
                return Ok(mine);
            }
            Ok(match next.run().await? {
                PreExecuteDecision::Allow => mine,
                ask @ PreExecuteDecision::Ask { .. } => approvals.inner_ask(&args.exec, ask),
                inner => inner,
            })
        }
    })
}
