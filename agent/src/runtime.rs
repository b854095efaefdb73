//! One sandboxed Lua state, reused for every evaluation on a thread, with per-call limits.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use mlua::chunk::ChunkMode;
use mlua::{Function, HookTriggers, Lua, LuaOptions, StdLib, Table, Value as LuaValue, VmState};

use crate::helpers;
use crate::printed::Printed;

/// How often (in VM instructions) the budget hook runs.
const HOOK_EVERY: u32 = 1000;
/// Most compiled scripts kept per runtime before the cache is emptied.
const CACHE_LIMIT: usize = 1024;
/// Prefix of the error raised when the instruction budget runs out.
pub const BUDGET_MESSAGE: &str = "instruction budget exceeded";

/// Limits applied to every single script call (top-level run, `evaluate`, aggregation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Lua VM instructions one call may execute.
    pub instructions: u64,
    /// Bytes one call may allocate on top of what the state already holds.
    pub memory_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            instructions: 10_000_000,
            memory_bytes: 32 << 20,
        }
    }
}

/// A script compiled once in a [`LuaRuntime`]: its private globals after the top-level run.
#[derive(Clone, Debug)]
pub struct Script {
    runtime_id: u64,
    env: Table,
    snapshot: Table,
}

impl Script {
    /// Whether the script defines a global function `name`.
    pub fn defines(&self, name: &str) -> bool {
        matches!(
            self.env.raw_get::<LuaValue>(name),
            Ok(LuaValue::Function(_))
        )
    }
}

/// A sandboxed Lua 5.4 state that behaves like Sveltos' Lua 5.1 where scripts can tell.
pub struct LuaRuntime {
    lua: Lua,
    id: u64,
    limits: Limits,
    budget: Arc<AtomicI64>,
    make_env: Function,
    restore: Function,
    cache: RefCell<HashMap<String, Script>>,
    printed: Printed,
    shell: Table,
    shell_slot: Table,
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// Lua that builds each script's private environment (runs with the real globals).
const ENV_FACTORY: &str = include_str!("script_env.lua");
/// Lua that makes the metatable of shells (see [`crate::lazy`]).
const SHELL: &str = include_str!("shell.lua");
/// Where the shell metatable is kept in the registry, for [`crate::convert::from_lua`].
pub(crate) const SHELL_KEY: &str = "sveltos-events.shell";
/// Where the function that fills a shell is kept in the registry.
pub(crate) const FILL_KEY: &str = "sveltos-events.fill";

impl LuaRuntime {
    /// Creates a runtime with the given per-call limits.
    pub fn new(limits: Limits) -> mlua::Result<Self> {
        let libs = StdLib::STRING | StdLib::TABLE | StdLib::MATH | StdLib::COROUTINE | StdLib::UTF8;
        let lua = Lua::new_with(libs, LuaOptions::default())?;
        let budget = Arc::new(AtomicI64::new(i64::MAX));
        let hook_budget = Arc::clone(&budget);
        lua.set_hook(
            HookTriggers::new().every_nth_instruction(HOOK_EVERY),
            move |_, _| {
                if hook_budget.fetch_sub(i64::from(HOOK_EVERY), Ordering::Relaxed) <= 0 {
                    return Err(mlua::Error::runtime(BUDGET_MESSAGE));
                }
                Ok(VmState::Continue)
            },
        )?;
        let modules = helpers::register(&lua, Arc::clone(&budget))?;
        let printed = Printed::default();
        let print_to = printed.clone();
        modules.set(
            "__print",
            lua.create_function(move |_, line: mlua::LuaString| {
                print_to.line(&line.to_string_lossy());
                Ok(())
            })?,
        )?;
        let kept = printed.clone();
        modules.set(
            "__printing",
            lua.create_function(move |_, ()| Ok(kept.is_kept()))?,
        )?;
        let (shell, shell_slot, fill): (Table, Table, Function) = lua
            .load(SHELL)
            .set_name("=shell")
            .set_mode(ChunkMode::Text)
            .call(())?;
        lua.set_named_registry_value(SHELL_KEY, &shell)?;
        lua.set_named_registry_value(FILL_KEY, &fill)?;
        modules.set("__shell", &shell)?;
        modules.set("__fill", fill)?;
        let (make_env, restore): (Function, Function) = lua
            .load(ENV_FACTORY)
            .set_name("=sandbox")
            .set_mode(ChunkMode::Text)
            .into_function()?
            .call((lua.globals(), modules))?;
        let runtime = Self {
            lua,
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            limits,
            budget,
            make_env,
            restore,
            cache: RefCell::new(HashMap::new()),
            printed,
            shell,
            shell_slot,
        };
        runtime
            .lua
            .set_memory_limit(runtime.lua.used_memory() + limits.memory_bytes)?;
        Ok(runtime)
    }

    /// The underlying Lua state (for conversions).
    pub fn lua(&self) -> &Lua {
        &self.lua
    }

    /// The metatable of shells ([`crate::lazy`]).
    pub(crate) fn shell_metatable(&self) -> &Table {
        &self.shell
    }

    /// Where the current call's shell filler is put (`fill`), and taken away after it.
    pub(crate) fn shell_slot(&self) -> &Table {
        &self.shell_slot
    }

    /// The limits applied to each call.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Keeps what scripts `print` from now on (dropped otherwise), for [`Self::take_printed`].
    pub fn keep_printed(&self) {
        self.printed.keep();
    }

    /// What scripts printed since the last call, one line per `print` (bounded, see
    /// [`crate::printed::MAX_PRINTED`]).
    pub fn take_printed(&self) -> String {
        self.printed.take()
    }

    /// Runs `f` under a fresh instruction budget and memory allowance.
    pub fn guarded<R>(&self, f: impl FnOnce(&Lua) -> mlua::Result<R>) -> Result<R, String> {
        let budget = i64::try_from(self.limits.instructions).unwrap_or(i64::MAX);
        self.budget.store(budget, Ordering::Relaxed);
        let base = self.lua.used_memory();
        if let Err(e) = self.lua.set_memory_limit(base + self.limits.memory_bytes) {
            return Err(e.to_string());
        }
        let result = f(&self.lua);
        self.budget.store(i64::MAX, Ordering::Relaxed);
        match result {
            Ok(value) => Ok(value),
            Err(error) => {
                // Give back what a failed (possibly hostile) call left behind.
                let _ = self.lua.set_memory_limit(0);
                let _ = self.lua.gc_collect();
                let _ = self
                    .lua
                    .set_memory_limit(self.lua.used_memory() + self.limits.memory_bytes);
                Err(describe(&error, self.limits))
            }
        }
    }

    /// Builds a call's argument from host data (API objects the agent already holds).
    ///
    /// Under a memory limit mlua wraps every table and string it creates in a protected call;
    /// converting an object node by node that way costs more than most scripts do. The limit
    /// is lifted while `f` runs, so what it allocates is bounded by the data given (already in
    /// the agent's memory), and checked against the per-call allowance once it is done.
    pub fn convert<R>(&self, f: impl FnOnce(&Lua) -> mlua::Result<R>) -> Result<R, String> {
        let base = self.lua.used_memory();
        self.lua.set_memory_limit(0).map_err(|e| e.to_string())?;
        let result = f(&self.lua);
        let grown = self.lua.used_memory().saturating_sub(base);
        let result = if grown > self.limits.memory_bytes {
            drop(result);
            let _ = self.lua.gc_collect();
            Err(mlua::Error::MemoryError(String::new()))
        } else {
            result
        };
        let limit = self.lua.used_memory() + self.limits.memory_bytes;
        self.lua
            .set_memory_limit(limit)
            .map_err(|e| e.to_string())?;
        result.map_err(|error| describe(&error, self.limits))
    }

    /// Compiles `source` (text only) into its own environment and runs its top level once.
    pub fn compile(&self, name: &str, source: &str) -> Result<Script, String> {
        self.guarded(|lua| {
            let env: Table = self.make_env.call(())?;
            let chunk = lua
                .load(source)
                .set_name(format!("={name}"))
                .set_mode(ChunkMode::Text)
                .set_environment(env.clone())
                .into_function()?;
            chunk.call::<()>(())?;
            let snapshot = lua.create_table()?;
            for pair in env.pairs::<LuaValue, LuaValue>() {
                let (k, v) = pair?;
                snapshot.raw_set(k, v)?;
            }
            Ok(Script {
                runtime_id: self.id,
                env,
                snapshot,
            })
        })
    }

    /// Returns the compiled script for `source`, compiling it on first use.
    pub fn script(&self, name: &str, source: &str) -> Result<Script, String> {
        if let Some(script) = self.cache.borrow().get(source) {
            return Ok(script.clone());
        }
        let script = self.compile(name, source)?;
        let mut cache = self.cache.borrow_mut();
        if cache.len() >= CACHE_LIMIT {
            cache.clear();
        }
        cache.insert(source.to_owned(), script.clone());
        Ok(script)
    }

    /// Calls the script's global `evaluate` with `arg` bound to the global `global` and as
    /// the first argument, then restores the script's globals to their post-compile state.
    pub fn call_evaluate(
        &self,
        script: &Script,
        global: &str,
        arg: LuaValue,
    ) -> Result<LuaValue, String> {
        if script.runtime_id != self.id {
            return Err("script was compiled by another Lua runtime".into());
        }
        let result = self.guarded(|_| {
            let function: LuaValue = script.env.raw_get("evaluate")?;
            let LuaValue::Function(function) = function else {
                return Err(mlua::Error::runtime(
                    "attempt to call a non-function object: the script defines no global function evaluate()",
                ));
            };
            script.env.raw_set(global, arg.clone())?;
            function.call::<LuaValue>(arg)
        });
        let reset = self.reset(script);
        match (result, reset) {
            (Ok(value), Ok(())) => Ok(value),
            (Err(e), _) => Err(e),
            (Ok(_), Err(e)) => Err(e.to_string()),
        }
    }

    /// Puts the script's globals back as they were after its top-level run.
    fn reset(&self, script: &Script) -> mlua::Result<()> {
        self.restore.call((&script.env, &script.snapshot))
    }
}

/// Turns an mlua error into a one-line, user-facing message.
fn describe(error: &mlua::Error, limits: Limits) -> String {
    match error {
        mlua::Error::MemoryError(_) => {
            format!(
                "memory limit exceeded ({} MiB per call)",
                limits.memory_bytes >> 20
            )
        }
        mlua::Error::CallbackError { cause, .. } => describe(cause, limits),
        mlua::Error::RuntimeError(m) if m.contains(BUDGET_MESSAGE) => {
            format!(
                "{BUDGET_MESSAGE} ({} instructions per call)",
                limits.instructions
            )
        }
        mlua::Error::RuntimeError(m) if m.contains("stack overflow") => {
            "stack overflow (recursion too deep)".to_owned()
        }
        mlua::Error::SyntaxError { message, .. } => format!("syntax error: {message}"),
        mlua::Error::RuntimeError(m) => first_line(m),
        other => first_line(&other.to_string()),
    }
}

fn first_line(text: &str) -> String {
    text.lines().next().unwrap_or_default().to_owned()
}
