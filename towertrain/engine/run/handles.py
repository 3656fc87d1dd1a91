"""What the loop and the built-in callbacks get instead of the Trainer.

The run's facts (steps, warmup, batches, outputs, the cluster) are the plan's
(towertrain.plan: RunPlan and its sections); these are the few things only
the live run has: its step, its position in the input, its state. Trainer.train
builds one RunHandles (towertrain/trainer.py) and hands it to the loop
(towertrain.engine.run.loop), to the run's resume (towertrain.state.resume)
and to towertrain.callbacks.default_callbacks, so no part below the Trainer holds the Trainer (tf_cnn_benchmarks'
`VariableMgr(benchmark_cnn)` back-reference is what this avoids).

Who uses what:

    handle                      what it is                           used by
    --------------------------  -----------------------------------  ---------------------------
    step(outputs)               one update; a StepResult             Loop
    global_step()               updates applied so far               Loop, Summaries
    begin(start_step)           the input position at the start      Loop
    drain()                     stops staging; steps left to train   Loop, CheckpointSaver
                                on what is staged
    header_info()               the trainer's header (label, value)  Loop.header_info
    add_fence(step)             stage nothing past `step`            CheckpointSaver, PeriodicEval,
                                                                     ClusterStop
    staged_batches()            batches staged, not yet trained on   Checkpointer
    staging_depth               batches staged ahead (0: none)       ClusterStop, Summaries
    evaluator, eval_data        an Evaluator and the resolved eval   PeriodicEval
                                split (None without eval in training)
    learning_rate               the schedule (value_at, initial)     DivergenceGuard, Summaries,
                                                                     Checkpointer
    model, variables, input,    what a checkpoint holds: the Keras   Checkpointer; Summaries
    engine_variables()          model (keys, shapes), the variable   (model, variables); the run
                                manager, the input position, the     record (model)
                                loss scale and manager state
    user_model                  the model was passed to              the run record
                                Trainer(model=...), not the registry's
    stop_request                multi-worker: this worker's stop     ClusterStop
                                request (a variable), else None
    trace_step()                the step's traced function           GraphFile
    settings                    every setting by flag name           BenchmarkLogFile
                                (the benchmark log's run_parameters)
    loss_probe()                what a user's loss_fn gives on        DivergenceGuard (a first
                                finite logits, if not finite (None:   step's NaN)
                                fine, or the default loss)

A user's callback reaches them as `self.loop.handles` (docs/library.md).
Every field defaults to None so a test builds only what its callback uses.
"""
import dataclasses
from typing import Any, Callable, Mapping, Optional


@dataclasses.dataclass(frozen=True)
class RunHandles:
    # The loop.
    step: Optional[Callable[[int], Any]] = None
    global_step: Optional[Callable[[], int]] = None
    begin: Optional[Callable[[int], None]] = None
    drain: Optional[Callable[[], int]] = None
    header_info: Optional[Callable[[], list]] = None
    # The input position (towertrain.engine.feed.position).
    add_fence: Optional[Callable[[int], None]] = None
    staged_batches: Optional[Callable[[], int]] = None
    staging_depth: int = 0
    # Eval during training.
    evaluator: Any = None
    eval_data: Any = None
    # The state: what checkpoints and summaries read.
    learning_rate: Any = None
    model: Any = None
    variables: Any = None
    input: Any = None
    engine_variables: Optional[Callable[[], Mapping[str, Any]]] = None
    user_model: bool = False
    stop_request: Any = None
    trace_step: Optional[Callable[[], Any]] = None
    settings: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    loss_probe: Optional[Callable[[], Optional[str]]] = None
