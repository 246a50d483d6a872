"""foldbench: `unittest`'s run time reads a clock that stands still.

The bare Python environment that a foldbench cell's shell commands run in imports this module at
start-up (through `foldbench_unittest_clock.pth`). It does nothing until a program imports
`unittest.runner`; then the runner's `time` is a copy of the `time` module whose `perf_counter`
always returns 0.0, so `python3 -m unittest` ends with `Ran 2 tests in 0.000s` on every run
instead of the few milliseconds this run happened to take. The tests themselves, their output,
their results and every other clock are untouched (`--durations` still reports real durations).
Without this, the same command prints different text on every run, and what an agent reads, a
fold archives and a request counts changes with it.
"""

import sys


class _StillClock:
    """`time` for `unittest.runner`: `perf_counter` stands still, the rest is the real module."""

    def __init__(self, real):
        self._real = real

    def perf_counter(self):
        return 0.0

    def __getattr__(self, name):
        return getattr(self._real, name)


class _Finder:
    """Finds `unittest.runner` once, and sets its clock after the module has run."""

    def find_spec(self, name, path=None, target=None):
        if name != "unittest.runner":
            return None
        sys.meta_path.remove(self)
        import importlib.util

        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            if hasattr(module, "time"):
                module.time = _StillClock(module.time)

        spec.loader.exec_module = exec_module
        return spec


if "unittest.runner" not in sys.modules:
    sys.meta_path.insert(0, _Finder())
