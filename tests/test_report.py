"""Plan tables: an unreachable plan says why."""

from streambed.report.console import Output
from streambed.report.tables import plan_tables


class Recorder(Output):
    def __init__(self):
        super().__init__(quiet=True)
        self.warnings = []

    def warn(self, message):
        self.warnings.append(message)

    def table(self, title, columns, rows):
        pass


def plan(b):
    """A plan whose log model (b per log slot) is solved with the guard rails for 10 M events/s."""
    from streambed.explorer import ExplorerSettings, guarded_solve
    from streambed.model import Surrogate

    model = {"family": "log", "a": 0.0, "b": b, "c": 1e6,
             "features": {"memory": "slot_mb", "slots_per_taskmanager": 16, "log": "log1p"}}
    solve = guarded_solve(Surrogate.from_dict(model), 512, 1e7, min_slots=2, measured_slots=48,
                          settings=ExplorerSettings())
    return {"query": "q1", "rate": 1e7, "safety": 1.1, "family": "log", "model": model,
            "entries": [{"memory_mb": 512, "slots": solve.slots, "predicted_mst": None, "configuration": None,
                         "by_family": {}, "max_slots": solve.max_slots, "max_rate": solve.max_rate,
                         "unreachable": solve.unreachable}]}


def test_an_unreachable_plan_whose_model_grows_too_slowly_says_what_it_supports():
    out = Recorder()
    plan_tables(out, plan(b=1e4))
    [warning] = out.warnings
    assert warning.startswith("512 MB per slot: unreachable within 19") and "gains less than 25 %" in warning
    # 1e6 + 1e4 ln(1 + 196) over the 1.1 safety factor
    assert "the most this plan supports is 957,120 events/s" in warning and "measure larger budgets" in warning


def test_an_unreachable_plan_whose_model_does_not_grow_says_so():
    out = Recorder()
    plan_tables(out, plan(b=-5.0))
    [warning] = out.warnings
    assert "does not grow with slots" in warning
