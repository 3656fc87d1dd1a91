"""tf_cnn_benchmarks' output: the header, warm-up, step lines and the total."""
from towertrain.engine.run import benchmark_log
from towertrain.plan.steps import warmup_of_run

from .base import Callback


class StepPrinter(Callback):
    """Prints the header, then a step line (global step, images/sec, loss) for the
    first timed step and every --display_every global steps, then the total.

    After the loss a line adds the step's training top-1 with
    `print_training_accuracy` (classifiers), then the share of the step time
    since the previous line spent waiting for input ('wait 37%'), so an
    input-bound run shows at a glance.

    ewma: --display_perf_ewma (images/sec from a weighted average of step
    times); loss_name: the loss column's title (--loss_type_to_report).

    The first `num_warmup_batches` steps of every process are untimed, a
    resumed one's too: they include tracing and filling the pipeline.
    """

    def __init__(self, display, num_warmup_batches, write=print,
                 print_training_accuracy=False, ewma=None, loss_name="total_loss"):
        self.display = display  # the run's Display section: which steps get a line
        self.num_warmup_batches = num_warmup_batches
        self.write = write
        self.print_training_accuracy = print_training_accuracy
        self.loss_name = loss_name  # --loss_type_to_report: the step lines' loss
        self.times = benchmark_log.StepTimes(ewma)
        self.wait = benchmark_log.WaitShare()
        self._steps_run = 0
        self._warmup = 0

    def before_train(self, loop):
        super().before_train(loop)
        self._warmup = warmup_of_run(self.num_warmup_batches, loop.start_step,
                                     loop.total_steps)
        # A resumed run says the steps it runs, not the plan's from step 0.
        info = benchmark_log.with_resumed_counts(loop.header_info(), loop.start_step,
                                                 loop.total_steps, self._warmup)
        for line in benchmark_log.header_lines(info):
            self.write(line)
        if loop.total_steps <= loop.start_step:
            self.write(f"Already at step {loop.start_step} of {loop.total_steps}; "
                       "nothing to train")
            return
        if self._warmup:
            self.write("Running warm up")

    def after_step(self, step, result, seconds):
        self._steps_run += 1
        if self._steps_run <= self._warmup:
            if self._steps_run == self._warmup:
                self.write("Done warm up")
            return
        if not self.times:
            self.write(f"Step\tImg/sec\t{self.loss_name}" +
                       ("\ttop_1_accuracy" if self.print_training_accuracy else ""))
        self.times.add(result.examples, seconds)
        if "input_wait_seconds" in result.extras:
            self.wait.add(result.extras["input_wait_seconds"], seconds)
        if self.display.is_display_step(step, len(self.times)):
            top1 = result.extras.get("top1") if self.print_training_accuracy else None
            self.write(self.times.step_line(step, result.loss, top1=top1,
                                            wait_share=self.wait.take()))

    def after_train(self):
        if self.times:
            self.loop.images_per_sec = self.times.total_images_per_sec()
            for line in benchmark_log.total_lines(self.loop.images_per_sec):
                self.write(line)
            if self._warmup > len(self.times):  # an epoch run whose warmup took most steps
                self.write(f"(the total covers the {len(self.times)} timed step"
                           f"{'s' if len(self.times) > 1 else ''}; the {self._warmup} "
                           "warmup steps before them are untimed)")
