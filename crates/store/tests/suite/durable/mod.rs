//! Durability around live agents: the checkpoint policy, resume through the agent seam,
//! and forks of stored sessions.

mod agent_loop;
mod checkpoint;
mod fork;
mod resume;
mod support;
