"""One line per check: what, result, figure; and the same as JSON."""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Dict, List, Optional

#: A check whose results matched.
PASS = "pass"
#: A check that failed (the exit status is non-zero).
FAIL = "fail"
#: A check that did not run here, with the reason.
SKIP = "skip"
#: Every launch of a check was made, on the CUDA driver test double, which computes nothing:
#: the results were not checked.
LAUNCHED = "launched"


@dataclass
class Result:
    """One check's outcome."""

    name: str
    status: str
    detail: str = ""
    figures: Dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    def line(self) -> str:
        """The printed line: ``name .... status  detail``."""
        figs = ", ".join(f"{k}={v}" for k, v in self.figures.items())
        tail = "; ".join(x for x in (self.detail, figs) if x)
        return f"{self.name:<34} {self.status.upper():<8} {tail}"


class Skip(Exception):
    """Raised by a check that cannot run here; its message is the reason."""


class Failure(AssertionError):
    """Raised by a check whose result is wrong; its message says what was wrong."""


class Report:
    """Runs checks and collects their results, printing each line as it comes."""

    def __init__(self, echo: Callable[[str], None] = print, on_double: bool = False, json_path: Optional[str] = None):
        self.results: List[Result] = []
        self.echo = echo
        self.on_double = on_double
        self.environment: Dict[str, Any] = {}
        #: Where the results are written after each one (a check that hangs the GPU leaves
        #: the ones before it on disk).
        self.json_path = json_path

    def run(self, name: str, check: Callable[[], Optional[Any]], gpu: bool = True) -> Result:
        """Runs ``check()``: it returns ``(detail, figures)``, a detail string or None, raises
        :class:`Skip` or :class:`Failure`; any other exception is a failure too. A ``gpu``
        check that succeeds on the driver double is :data:`LAUNCHED`, not :data:`PASS`."""
        start = time.perf_counter()
        try:
            out = check()
            detail, figures = (out if isinstance(out, tuple) else (out or "", {}))
            status = LAUNCHED if self.on_double and gpu else PASS
        except Skip as e:
            status, detail, figures = SKIP, str(e), {}
        except Exception as e:  # noqa: BLE001  (every failure becomes a line)
            status, detail, figures = FAIL, f"{type(e).__name__}: {e}", {}
        result = Result(name, status, detail, figures, round(time.perf_counter() - start, 4))
        self._record(result)
        return result

    def add(self, result: Result) -> None:
        """Adds a result made elsewhere (a benchmark row)."""
        self._record(result)

    def _record(self, result: Result) -> None:
        self.results.append(result)
        self.echo(result.line())
        if self.json_path:
            self.write_json(self.json_path)

    @property
    def failed(self) -> List[Result]:
        """The failed checks."""
        return [r for r in self.results if r.status == FAIL]

    def summary(self) -> str:
        """``N checks: a pass, b launched, c skipped, d failed``."""
        counts = {s: sum(r.status == s for r in self.results) for s in (PASS, LAUNCHED, SKIP, FAIL)}
        return (
            f"{len(self.results)} checks: {counts[PASS]} passed, {counts[LAUNCHED]} launched on the "
            f"driver double (results not checked), {counts[SKIP]} skipped, {counts[FAIL]} failed"
        )

    def write_json(self, path: str) -> None:
        """Writes the environment and every result to ``path``."""
        doc = {
            "environment": self.environment,
            "results": [asdict(r) for r in self.results],
            "summary": self.summary(),
        }
        with open(path, "w") as f:
            json.dump(doc, f, indent=2, default=str)
            f.write("\n")
