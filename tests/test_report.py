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
    model = {"family": "log", "a": 0.0, "b": b, "c": 1e6,
             "features": {"memory": "slot_mb", "slots_per_taskmanager": 16, "log": "log1p"}}
    return {"query": "q1", "rate": 1e7, "safety": 1.1, "family": "log", "model": model,
            "entries": [{"memory_mb": 512, "slots": None, "predicted_mst": None, "configuration": None,
                         "by_family": {}}]}


def test_an_unreachable_plan_whose_model_grows_too_slowly_says_what_it_reaches():
    out = Recorder()
    plan_tables(out, plan(b=1e4))
    [warning] = out.warnings
    assert "11,000,000 events/s" in warning  # rate x safety
    assert "at 100,000 slots of 512 MB it predicts 1,115,129" in warning  # 1e6 + 1e4 ln(100001)


def test_an_unreachable_plan_whose_model_does_not_grow_says_so():
    out = Recorder()
    plan_tables(out, plan(b=-5.0))
    [warning] = out.warnings
    assert "does not grow with slots" in warning
