//! What one script may consume, and the meter that stops it: a memory limit on the Lua
//! allocator, an instruction-count hook, a wall-clock backstop, and [`Capped`] for the
//! strings helpers build on the Rust side before handing them to Lua.
//!
//! The instruction count is the limit that decides: it is the same on every machine, so
//! a script that fits fits everywhere. The clock only catches what the count cannot see,
//! loops over standard-library calls that work long in C (`string.rep`, `table.concat`,
//! `collectgarbage`). One call of a pathological Lua pattern is still unbounded: the
//! matcher runs in C and never reaches the hook. What the helpers hold on the Rust side
//! while they work stays within a small multiple of the state's memory.

use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use airlock_bundle::Limits;
use mlua::{HookTriggers, Lua, VmState};

use super::go_runes;

const MIB: usize = 1024 * 1024;

/// Instructions between two looks at the meter: often enough that a runaway loop stops
/// within a millisecond of its budget, rarely enough to cost nothing measurable.
const HOOK_EVERY: u32 = 1_000;

/// The limits of one `evaluate` call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LuaBudget {
    /// Lua VM instructions for the top-level chunk and `evaluate` together. The scripts
    /// Sveltos documents need thousands of times fewer; a runaway loop spends them in
    /// well under a second.
    pub instructions: u64,
    /// Bytes the Lua state may allocate, the `resources` table included: the largest
    /// objects the API server stores are about 1.5 MiB, and a script works on a few.
    pub memory_bytes: usize,
    /// Wall-clock time, a backstop for work the instruction count does not see.
    pub time: Duration,
    /// Bytes of the manifest text returned: four times the largest file a bundle holds.
    pub output_bytes: usize,
}

impl LuaBudget {
    pub const DEFAULT: LuaBudget = LuaBudget {
        instructions: 50_000_000,
        memory_bytes: 64 * MIB,
        time: Duration::from_secs(10),
        output_bytes: 4 * Limits::SPEC.file_bytes as usize,
    };
}

impl Default for LuaBudget {
    fn default() -> Self {
        LuaBudget::DEFAULT
    }
}

/// Which budget ran out, once one has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Spent {
    Instructions,
    Time,
}

/// Shared by the hook, the `pcall` guard and `evaluate`.
#[derive(Debug)]
pub(super) struct Meter {
    instructions: Cell<u64>,
    started: Instant,
    spent: Cell<Option<Spent>>,
    /// The script line running when a budget ran out.
    line: Cell<Option<u32>>,
}

impl Meter {
    pub(super) fn spent(&self) -> Option<Spent> {
        self.spent.get()
    }

    pub(super) fn line(&self) -> Option<u32> {
        self.line.get()
    }

    /// Fails once a budget has run out. The sandbox's `pcall` and `xpcall` call this after
    /// every protected call, so a script cannot catch the error and go on looping.
    pub(super) fn check(&self) -> mlua::Result<()> {
        match self.spent.get() {
            Some(spent) => Err(spent_error(spent)),
            None => Ok(()),
        }
    }
}

fn spent_error(spent: Spent) -> mlua::Error {
    mlua::Error::runtime(match spent {
        Spent::Instructions => "instruction budget exceeded",
        Spent::Time => "time budget exceeded",
    })
}

/// The memory limit, read back by [`allowance`].
#[derive(Debug, Clone, Copy)]
struct MemoryLimit(usize);

/// Puts `lua` under `budget`. `script_chunk` is the chunk name whose lines the meter records.
pub(super) fn install(lua: &Lua, budget: &LuaBudget, script_chunk: &'static str) -> mlua::Result<Rc<Meter>> {
    // mlua reads a limit of zero as none.
    let memory = budget.memory_bytes.max(1);
    lua.set_memory_limit(memory)?;
    lua.set_app_data(MemoryLimit(memory));
    let meter = Rc::new(Meter { instructions: Cell::new(0), started: Instant::now(), spent: Cell::new(None), line: Cell::new(None) });
    let step = u32::try_from(budget.instructions).unwrap_or(u32::MAX).clamp(1, HOOK_EVERY);
    let (limit, time) = (budget.instructions, budget.time);
    let hooked = meter.clone();
    lua.set_hook(HookTriggers::new().every_nth_instruction(step), move |_, debug| {
        let used = hooked.instructions.get() + u64::from(step);
        hooked.instructions.set(used);
        let spent = if used > limit {
            Some(Spent::Instructions)
        } else if hooked.started.elapsed() > time {
            Some(Spent::Time)
        } else {
            hooked.spent.get()
        };
        let Some(spent) = spent else { return Ok(VmState::Continue) };
        if hooked.spent.get().is_none() {
            hooked.spent.set(Some(spent));
            if debug.source().short_src.as_deref() == Some(script_chunk) {
                hooked.line.set(debug.current_line().and_then(|line| u32::try_from(line).ok()));
            }
        }
        Err(spent_error(spent))
    })?;
    Ok(meter)
}

/// Bytes the state may still allocate: a string built on the Rust side that is larger
/// could not become a Lua value anyway.
fn allowance(lua: &Lua) -> usize {
    let limit = lua.app_data_ref::<MemoryLimit>().map_or(0, |limit| limit.0);
    limit.saturating_sub(lua.used_memory())
}

/// The error the Lua allocator raises, for memory the Rust side refuses to spend.
pub(super) fn out_of_memory() -> mlua::Error {
    mlua::Error::MemoryError("not enough memory".into())
}

/// A byte string built for a helper's result, refused once it could not fit in the state.
pub(super) struct Capped {
    bytes: Vec<u8>,
    limit: usize,
}

impl Capped {
    pub(super) fn new(lua: &Lua) -> Capped {
        Capped { bytes: Vec::new(), limit: allowance(lua) }
    }

    pub(super) fn push(&mut self, bytes: &[u8]) -> mlua::Result<()> {
        self.reserve(bytes.len())?;
        self.bytes.extend_from_slice(bytes);
        Ok(())
    }

    /// Fails unless `more` bytes still fit.
    pub(super) fn reserve(&self, more: usize) -> mlua::Result<()> {
        match self.bytes.len().checked_add(more) {
            Some(total) if total <= self.limit => Ok(()),
            _ => Err(out_of_memory()),
        }
    }

    /// Appends `r` as Go's `utf8.AppendRune` does.
    pub(super) fn push_rune(&mut self, r: i32) -> mlua::Result<()> {
        self.reserve(4)?;
        go_runes::push_rune(&mut self.bytes, r);
        Ok(())
    }

    pub(super) fn into_lua(self, lua: &Lua) -> mlua::Result<mlua::LuaString> {
        lua.create_string(&self.bytes)
    }
}
