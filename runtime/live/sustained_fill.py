"""`hkv run --fill`: sustained concurrency measured with the real model.

N copies of one request (the first prompt, then `max_new_tokens` output tokens, EOS ignored)
arrive together and run through `generate()`: the real scheduler (vLLM 0.32's admission), the real
pools and the real forward. A trial is clean when no copy was preempted and all N ran at once.
The largest clean N is found with the planner's search (`largest_clean`, from `search_guess`),
capped at max_num_seqs; prefix caching is off so the copies share no block, as in the definition
of the sustained figure (hkv.planner.capacity.sustained). The planner's prediction for the same request is
made from the Layout alone; the two meet only in the report.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from hkv.planner.capacity.sustained import SustainedSetup, largest_clean, predict_sustained, search_guess
from hkv.runtime.live.live_run import RunOutcome, generate
from hkv.runtime.live.model_runner import ModelRunner
from hkv.runtime.live.run_config import RunConfig
from hkv.runtime.simulation.sustained_probe import Trial  # one trial's record, as the simulated probe's


@dataclass(frozen=True)
class FillOutcome:
    prompt_len: int
    output_len: int
    max_num_seqs: int  # the search's cap
    predicted: int  # the planner's sustained N for this request
    measured: int  # largest clean N with the real model (0: one copy alone is not clean)
    trials: tuple[Trial, ...]  # in the order run
    run: RunOutcome | None  # the run of `measured` copies; None when measured is 0

    @property
    def capped(self) -> bool:
        """The cap ran clean: the pools may sustain more than max_num_seqs."""
        return self.measured >= self.max_num_seqs


def fill(runner: ModelRunner, prompt: Sequence[int], config: RunConfig,
         on_trial: Callable[[Trial], None] | None = None) -> FillOutcome:
    """Measure the sustained concurrency of copies of `prompt` + `config.max_new_tokens` output
    tokens (fewer if max_model_len ends the request) on `runner`; `on_trial` sees each trial.
    Resets the runner's cache state between trials; mutates nothing else it is given."""
    layout = runner.layout
    output_len = min(config.max_new_tokens, layout.max_model_len - len(prompt))
    seq_len = len(prompt) + output_len
    setup = SustainedSetup(config.max_num_batched_tokens, config.max_num_seqs, output_len, seq_len)
    trial_config = replace(config, max_new_tokens=output_len, eos_token_ids=frozenset(),
                           enable_prefix_caching=False, record_logits=False, check_tables=False)
    outcomes: dict[int, RunOutcome] = {}
    trials: list[Trial] = []

    def is_clean(num_requests: int) -> bool:
        outcome = generate(runner, [prompt] * num_requests, trial_config)
        finished = sum(1 for g in outcome.generations if g.finish_reason is not None)
        trial = Trial(num_requests, outcome.cache.num_preemptions, outcome.cache.peak_running, finished)
        trials.append(trial)
        if on_trial is not None:
            on_trial(trial)
        if trial.is_clean:
            outcomes[num_requests] = outcome
        return trial.is_clean

    measured = largest_clean(search_guess(layout, seq_len), config.max_num_seqs, is_clean)
    return FillOutcome(len(prompt), output_len, config.max_num_seqs, predict_sustained(layout, setup),
                       measured, tuple(trials), outcomes.get(measured))
