//! Grid functions (`lambda META: (triton.cdiv(n, META["BLOCK"]),)`) evaluated from their
//! trace: Python's `safecall._triton_grid.trace_grid` traces a grid once per code object into
//! a generated function of the integers it reads (`META` values, closure cells, module-level
//! integers); each call checks that the grid still reads what was traced (its globals name the
//! same objects, `triton.cdiv` is the same function, every input is an exact `int`) and calls
//! the generated function instead of the grid, which saves `triton.cdiv`'s host-side cost
//! (about 1.5 us). Anything else leaves the grid to be called as Triton calls it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyInt, PyString, PyTuple};
use smallvec::SmallVec;

/// How many grid code objects are remembered before the cache starts over.
const CAPACITY: usize = 256;

/// A traced grid (Python's `GridPlan`, with `META` keys resolved to parameter positions).
struct Plan {
    function: Py<PyAny>,
    keys: Vec<usize>,
    /// Per closure cell: `None` an integer input, else the object it must still hold.
    cells: Vec<Option<Py<PyAny>>>,
    inputs: Vec<Py<PyString>>,
    globals: Vec<(Py<PyString>, Py<PyAny>)>,
    attributes: Vec<(Py<PyAny>, Py<PyString>, Py<PyAny>)>,
}

/// Code object address -> (the code object, kept so the address is not reused; its plan,
/// `None` where it cannot be traced).
type Plans = HashMap<usize, (Py<PyAny>, Option<Arc<Plan>>), rustc_hash::FxBuildHasher>;

/// The traced grids of one kernel's dispatcher.
pub(crate) struct GridTraces {
    trace: Py<PyAny>,
    function_type: Py<PyAny>,
    plans: Mutex<Plans>,
}

impl GridTraces {
    /// `trace(grid, names) -> GridPlan | None`: Python's `trace_grid`.
    pub(crate) fn new(py: Python<'_>, trace: Py<PyAny>) -> PyResult<Self> {
        Ok(GridTraces {
            trace,
            function_type: py.import("types")?.getattr("FunctionType")?.unbind(),
            plans: Mutex::new(Plans::default()),
        })
    }

    /// The grid `grid(META)` returns, from its trace, or `None` where the grid must be called
    /// (it is no traced function, or something it reads changed). `names` and `values` are
    /// the kernel's parameters and this call's values (`META`).
    pub(crate) fn evaluate<'py>(
        &self,
        grid: &Bound<'py, PyAny>,
        names: &[Py<PyString>],
        values: &[Bound<'py, PyAny>],
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let py = grid.py();
        if !grid.get_type().is(self.function_type.bind(py)) {
            return Ok(None);
        }
        let Some(plan) = self.plan(grid, names)? else {
            return Ok(None);
        };
        let globals = grid.getattr(intern!(py, "__globals__"))?;
        let globals = globals.cast::<PyDict>()?;
        for (name, object) in &plan.globals {
            match globals.get_item(name.bind(py))? {
                Some(v) if v.is(object.bind(py)) => {}
                _ => return Ok(None),
            }
        }
        for (owner, name, object) in &plan.attributes {
            match owner.bind(py).getattr(name.bind(py)) {
                Ok(v) if v.is(object.bind(py)) => {}
                _ => return Ok(None),
            }
        }
        let mut args: SmallVec<[Bound<'py, PyAny>; 8]> = SmallVec::new();
        for &i in &plan.keys {
            args.push(values[i].clone());
        }
        if !plan.cells.is_empty() {
            let closure = grid.getattr(intern!(py, "__closure__"))?;
            let Ok(closure) = closure.cast::<PyTuple>() else {
                return Ok(None);
            };
            if closure.len() != plan.cells.len() {
                return Ok(None);
            }
            for (cell, fixed) in closure.iter().zip(&plan.cells) {
                // An empty cell raises ValueError: the grid itself then reports it.
                let Ok(v) = cell.getattr(intern!(py, "cell_contents")) else {
                    return Ok(None);
                };
                match fixed {
                    None => args.push(v),
                    Some(object) if v.is(object.bind(py)) => {}
                    Some(_) => return Ok(None),
                }
            }
        }
        for name in &plan.inputs {
            let Some(v) = globals.get_item(name.bind(py))? else {
                return Ok(None);
            };
            args.push(v);
        }
        if !args.iter().all(|a| a.is_exact_instance_of::<PyInt>()) {
            return Ok(None);
        }
        // Any error (a zero block size) is left to the grid itself to raise.
        Ok(plan.function.bind(py).call1(PyTuple::new(py, args)?).ok())
    }

    /// The plan of `grid`'s code object, traced on first sight.
    fn plan(&self, grid: &Bound<'_, PyAny>, names: &[Py<PyString>]) -> PyResult<Option<Arc<Plan>>> {
        let py = grid.py();
        let code = grid.getattr(intern!(py, "__code__"))?;
        let address = code.as_ptr() as usize;
        let plans = || self.plans.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, plan)) = plans().get(&address) {
            return Ok(plan.clone());
        }
        let list: Vec<Bound<'_, PyString>> = names.iter().map(|n| n.bind(py).clone()).collect();
        let traced = self.trace.bind(py).call1((grid, list))?;
        let plan = if traced.is_none() {
            None
        } else {
            let keys = traced
                .getattr("keys")?
                .extract::<Vec<Py<PyString>>>()?
                .iter()
                .map(|k| {
                    names
                        .iter()
                        .position(|n| n.bind(py).as_any().eq(k.bind(py)).unwrap_or(false))
                })
                .collect::<Option<Vec<usize>>>();
            keys.map(|keys| -> PyResult<Arc<Plan>> {
                Ok(Arc::new(Plan {
                    function: traced.getattr("fn")?.unbind(),
                    keys,
                    cells: traced.getattr("cells")?.extract()?,
                    inputs: traced.getattr("inputs")?.extract()?,
                    globals: traced.getattr("globals")?.extract()?,
                    attributes: traced.getattr("attributes")?.extract()?,
                }))
            })
            .transpose()?
        };
        // What the cache lets go of is released after its lock (a release may run Python code).
        let released = {
            let mut plans = plans();
            let full = (plans.len() >= CAPACITY).then(|| std::mem::take(&mut *plans));
            (full, plans.insert(address, (code.unbind(), plan.clone())))
        };
        drop(released);
        Ok(plan)
    }
}
