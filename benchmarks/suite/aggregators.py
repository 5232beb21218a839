"""Fit and transform time, peak memory and 1-NN accuracy of every aggregator: smoke and paper scale.

Case names read ``<Class>.<measure>(<method>[, <descriptor>])``, e.g. ``PaperFit.time_fit('sc', 'daisy')``.
``*Fit`` classes time the fit from scratch; ``*Fitted`` classes fit once in ``setup`` and time the
transform and track the accuracy, so a change that is faster but scores differently shows in
``asv compare`` too. ``asv run --bench SmokeFit.time_fit`` is the quick check that every method runs.
"""

from __future__ import annotations

import time

from lfabench.registry import get_plugin

from .cases import AGGREGATORS, PAPER_AGGREGATORS, labelled_fraction, one_nn_accuracy, smoke_params, split_bags, variant


def smoke_aggregator(method, descriptor):
    return get_plugin("aggregator", method)(**smoke_params(method))


def paper_aggregator(method, descriptor):
    """``method`` at the paper's settings (``cases.variant``: its defaults or a named variant), seed 0."""
    plugin, params = variant(method)
    factory = get_plugin("aggregator", plugin)
    if "random_state" in factory().get_params():
        params = dict(params, random_state=0)
    return factory(**params)


class _Case:
    dataset = "digits"
    build = staticmethod(smoke_aggregator)

    def load(self, method, descriptor):
        self.train, self.fit_labels, self.y_train, self.test, self.y_test = split_bags(
            self.dataset, descriptor, labelled_fraction(method))
        self.aggregator = self.build(method, descriptor)


class _Fit(_Case):
    def setup(self, method, descriptor="patches"):
        self.load(method, descriptor)

    def time_fit(self, *case):
        self.aggregator.fit(self.train, self.fit_labels)

    def peakmem_fit(self, *case):
        self.aggregator.fit(self.train, self.fit_labels)


class _Fitted(_Case):
    def setup(self, method, descriptor="patches"):
        self.load(method, descriptor)
        self.aggregator.fit(self.train, self.fit_labels)

    def time_transform(self, *case):
        self.aggregator.transform(self.test)

    def track_accuracy(self, *case):
        return one_nn_accuracy(self.aggregator.transform(self.train), self.y_train,
                               self.aggregator.transform(self.test), self.y_test)

    track_accuracy.unit = "%"


class SmokeFit(_Fit):
    """Every aggregator at its tiny smoke settings on the embedded digits."""

    params = [list(AGGREGATORS)]
    param_names = ["method"]
    timeout = 300


class SmokeFitted(_Fitted):
    params, param_names, timeout = SmokeFit.params, SmokeFit.param_names, SmokeFit.timeout


class PaperFit(_Fit):
    """Every aggregator at the paper's settings (``PAPER_AGGREGATORS``) on Fifteen Scene SIFT-90 and DAISY-150."""

    dataset = "scene15"
    build = staticmethod(paper_aggregator)
    params = [list(PAPER_AGGREGATORS), ["sift", "daisy"]]
    # CPU seconds of the process: on one thread (OMP_NUM_THREADS=1) the work done, whatever else the machine
    # runs; wall time on a shared machine is mostly the other jobs' at paper scale
    timer = staticmethod(time.process_time)
    param_names = ["method", "descriptor"]
    timeout = 7200
    number = 1
    repeat = 1
    rounds = 1


class PaperFitted(_Fitted):
    # the builder is re-wrapped: read off the class, PaperFit.build is a plain function, which as a class
    # attribute here would become a method and receive the instance
    dataset, build, params, param_names = PaperFit.dataset, staticmethod(paper_aggregator), PaperFit.params, \
        PaperFit.param_names
    timeout, number, repeat, rounds = PaperFit.timeout, PaperFit.number, PaperFit.repeat, PaperFit.rounds
    timer = PaperFit.timer
