"""The time left of a run (`fastcon.experiments._time_left.TimeLeft`), on a fake clock."""
import pytest

from fastcon.experiments import _runner
from fastcon.experiments._time_left import TimeLeft


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def method_kinds(task):
    return [(task["dataset"], task["method"]), (task["method"],)]


def timer_of_kindless_tasks(n):
    """A timer without kinds that knows tasks ``0..n-1``, and its clock."""
    clock = Clock()
    timer = TimeLeft(clock=clock)
    for i in range(n):
        timer.add(i, {})
    return timer, clock


def run_one_at_a_time(timer, clock, durations):
    """Tasks ``i`` run here back to back, for ``durations[i]`` seconds each."""
    for i, seconds in durations:
        timer.start(i)
        clock.now += seconds
        timer.finish(i, {}, fresh=True)


def test_nothing_is_estimated_before_a_task_ran_here():
    clock = Clock()
    timer = TimeLeft(method_kinds, lambda record: record["seconds"], clock=clock)
    timer.add(0, {"dataset": "a", "method": "idca"})
    timer.add(1, {"dataset": "a", "method": "idca"})
    timer.finish(0, {"seconds": 50.0}, fresh=False)        # a loaded record alone gives no pace
    assert timer.seconds_left() is None
    assert timer.estimate({"dataset": "a", "method": "idca"}) == 50.0


def test_one_worker_without_kinds_is_the_mean_duration_times_the_tasks_left():
    timer, clock = timer_of_kindless_tasks(4)
    run_one_at_a_time(timer, clock, ((0, 10.0), (1, 30.0)))
    assert timer.seconds_left() == pytest.approx(2 * 20.0)


def test_each_task_is_estimated_by_its_own_kind():
    """Cheap and expensive tasks: the mean over all (50.5 s) would say 202 s for 3 cheap + 1 expensive."""
    clock = Clock()
    timer = TimeLeft(method_kinds, clock=clock)
    tasks = [{"dataset": "a", "method": m} for m in ("idca", "pairwise", "idca", "pairwise", "pairwise", "pairwise")]
    for i, task in enumerate(tasks):
        timer.add(i, task)
    run_one_at_a_time(timer, clock, ((0, 100.0), (1, 1.0)))
    assert timer.seconds_left() == pytest.approx(100.0 + 3 * 1.0)


def test_an_unseen_kind_falls_back_to_the_general_one_and_fresh_comes_before_loaded():
    clock = Clock()
    timer = TimeLeft(method_kinds, lambda record: record.get("seconds"), clock=clock)
    timer.add(0, {"dataset": "bank", "method": "penalty"})
    timer.add(1, {"dataset": "bank", "method": "idca"})
    timer.add(2, {"dataset": "a9a", "method": "idca"})
    timer.finish(0, {"seconds": 300.0}, fresh=False)
    timer.finish(1, {"seconds": 500.0}, fresh=False)
    run_one_at_a_time(timer, clock, ((2, 200.0),))
    # a9a penalty: no a9a penalty run yet, so every penalty run (the loaded bank one)
    assert timer.estimate({"dataset": "a9a", "method": "penalty"}) == 300.0
    # idca: the run measured here (200 s), not the loaded one (500 s), at the same level
    assert timer.estimate({"dataset": "law", "method": "idca"}) == 200.0
    # a method never seen: the mean of every run here
    assert timer.estimate({"dataset": "a9a", "method": "direct_ssg"}) == 200.0


def test_two_busy_workers_halve_the_time_and_running_tasks_count_what_is_left_of_them():
    timer, clock = timer_of_kindless_tasks(3)
    timer.start(0)
    timer.start(1)
    clock.now = 10.0
    timer.finish(0, {}, fresh=True)          # 10 s; task 1 has run 10 s of its expected 10 s
    timer.start(2)
    clock.now = 12.0                         # task 1: 12 s, past its estimate (counts 0); task 2: 2 s
    # wall 12 s over busy 10 + 12 + 2 = 24 s: 1/2; left: task 2's 10 - 2 = 8 s of work, 4 s of wall
    assert timer.seconds_left() == pytest.approx(4.0)


def test_run_tasks_tells_the_timer_of_every_task():
    clock = Clock()
    timer = TimeLeft(clock=clock)
    lefts = []

    def execute(task):
        clock.now += task["cost"]
        return {"cost": task["cost"]}

    _runner.run_tasks([{"cost": 5.0}, {"cost": 5.0}, {"cost": 5.0}], execute, 1, timer=timer,
                      progress=lambda done, total, fresh: lefts.append(timer.seconds_left()))
    assert lefts == [pytest.approx(10.0), pytest.approx(5.0), pytest.approx(0.0)]
