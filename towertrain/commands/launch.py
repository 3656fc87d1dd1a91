"""`python -m towertrain.launch --num_workers=N [--max_restarts=R] -- <flags>`

Starts N worker processes of `python -m towertrain <flags>` on this machine,
a cluster on free loopback ports (each gets --worker_hosts, --task_index and
--cluster_source=flags; --variable_update=collective_all_reduce unless given).
Every line a worker prints comes out prefixed with its task ("[task 1] ...").
A GPU run of several workers gives each its own --num_gpus of the machine's
GPUs through CUDA_VISIBLE_DEVICES (task k: the k-th share of the launcher's
list, towertrain.config.gpu_share); workers that would share a GPU are
refused before any starts.

- SIGINT/SIGTERM are forwarded to every worker: the first makes them stop
  together at one step, the chief saves, all exit 0 (towertrain.callbacks.
  cluster_stop); a second one makes them exit at once.
- A worker that fails (non-zero status, or killed) stops the rest: each
  notices the lost peer at its next collective and stops with one line (the
  chief saves its last step); any still running after STOP_GRACE_SECS is
  killed. Survivors that have all said their line are stopped then: they
  only wait so the others' health checks still see them. The launcher
  exits with that first failure's status (128 + N for a signal N).
- --max_restarts=R: after a failure, every worker is started again, up to R
  times, on fresh ports; with --train_dir they resume from its latest
  checkpoint (as torchrun's --max-restarts).
- --min_workers=M [--max_workers=X]: elastic (towertrain.commands.elastic):
  after a failure the survivors go on from the chief's checkpoint while at
  least M remain, at the same --global_batch_size; SIGUSR1 takes a worker
  back in at the next periodic checkpoint (--save_model_steps), up to X.

Imports no TensorFlow: the workers do.
"""
import argparse
import ctypes
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time

from towertrain.commands import common, elastic, worker_log
from towertrain.config import gpu_share
from towertrain.engine.distributed import peer_loss
from towertrain.engine.process.settings import Devices
from towertrain.errors import DeviceError, ParamsError
from towertrain.plan import global_batch

COMMAND = "towertrain.launch"
SET_BY_LAUNCHER = ("--worker_hosts", "--task_index", "--cluster_source")
POLL_SECONDS = 0.05
# The chief's step line: '<step>\timages/sec: ...'.
STEP_LINE = re.compile(r"^(\d+)\timages/sec")
# After a worker fails, how long the others have to stop by themselves (they
# notice the lost peer at their next collective, or within the peer watch's
# --collective_timeout_secs when it hangs instead) before they are killed.
STOP_GRACE_SECS = 15.0


def _parser():
    parser = argparse.ArgumentParser(
        prog=f"python -m {COMMAND}",
        usage=(f"python -m {COMMAND} --num_workers=N [--max_restarts=R | --min_workers=M "
               "[--max_workers=X]] -- <towertrain flags>"),
        description="Runs a multi-worker towertrain job on this machine (loopback ports).")
    parser.add_argument("--num_workers", type=int, required=True,
                        help="worker processes to start (task 0 is the chief)")
    parser.add_argument("--max_restarts", type=int, default=0,
                        help="restart every worker after a failure up to this many times "
                             "(they resume from --train_dir's latest checkpoint)")
    parser.add_argument("--min_workers", type=int, default=None,
                        help="elastic: go on with the workers left after a failure while at "
                             "least this many remain (needs --train_dir and "
                             "--global_batch_size in the worker flags)")
    parser.add_argument("--max_workers", type=int, default=None,
                        help="elastic: SIGUSR1 takes a worker back in at the next "
                             "periodic checkpoint, up to this many (default --num_workers)")
    parser.add_argument("--stop_grace_secs", type=float, default=STOP_GRACE_SECS,
                        help="after a worker fails, seconds the others have to stop by "
                             "themselves (the chief saves its last step) before they are "
                             f"killed (default {STOP_GRACE_SECS:g})")
    parser.add_argument("--module", default="towertrain",
                        help="the Python module each worker runs (default: towertrain)")
    return parser


def parse(argv):
    """(options, worker flags) from argv[1:]; a usage error exits 2."""
    args = list(argv)
    flags = []
    if "--" in args:
        at = args.index("--")
        args, flags = args[:at], args[at + 1:]
    options = _parser().parse_args(args)
    problem = None
    if options.num_workers < 1:
        problem = f"--num_workers={options.num_workers}: must be >= 1"
    elif options.max_restarts < 0:
        problem = f"--max_restarts={options.max_restarts}: must be >= 0"
    elif not options.stop_grace_secs >= 0:
        problem = f"--stop_grace_secs={options.stop_grace_secs:g}: must be >= 0 seconds"
    for flag in flags:
        name = flag.split("=", 1)[0]
        if name in SET_BY_LAUNCHER:
            problem = f"{flag}: the launcher sets {name} for each worker; drop it"
        elif name == "--gpu_indices" and options.num_workers > 1:
            problem = (f"{flag}: the launcher gives each worker its own GPUs through "
                       f"{gpu_share.VISIBLE}; pick the machine's GPUs with "
                       f"{gpu_share.VISIBLE} on the launcher instead")
        elif name == "--variable_update" and options.num_workers > 1 and (
                flag != "--variable_update=collective_all_reduce"):
            problem = (f"{flag}: {options.num_workers} workers need "
                       "--variable_update=collective_all_reduce")
    if not problem and (options.min_workers is not None or options.max_workers is not None):
        if options.min_workers is None:
            problem = f"--max_workers={options.max_workers}: needs --min_workers"
        elif options.max_restarts:
            problem = (f"--max_restarts={options.max_restarts}: not with --min_workers, "
                       "which goes on with the workers left instead of restarting them all")
        else:
            problem = elastic.refusal(options, lambda name: _flag_value(flags, name))
    if problem:
        sys.exit(common.fail(problem, command=COMMAND))
    return options, flags


def _flag_value(flags, name):
    """The last value of --name in the worker flags ('--name=v' or '--name v'), or None."""
    value = None
    for i, flag in enumerate(flags):
        if flag.startswith(f"--{name}="):
            value = flag.split("=", 1)[1]
        elif flag == f"--{name}" and i + 1 < len(flags):
            value = flags[i + 1]
    return value


def _towers_per_worker(flags):
    """The towers each worker runs by the worker flags (0: unreadable, the
    workers refuse it)."""
    return Devices.towers_in_flags(lambda name: _flag_value(flags, name))


def global_batch_refusal(flags, workers):
    """Why the worker flags' --global_batch_size cannot be cut over `workers`
    (the plan's own reason), or None."""
    def number(name, default):
        value = _flag_value(flags, name)
        return int(value) if value else default
    try:
        global_batch.split(number("global_batch_size", None), number("batch_size", None),
                           number("gradient_accumulation_steps", 1), workers,
                           _towers_per_worker(flags), 1)
    except (ParamsError, ValueError) as err:
        return str(err)
    return None


def gpu_shares(num_workers, flags, environ, device_nodes=gpu_share.DEVICE_NODES):
    """Each task's CUDA_VISIBLE_DEVICES (None: the worker's environment as
    the launcher's): with 2+ workers on GPUs (--device=gpu, or no --device on
    a machine with GPUs), the k-th --num_gpus of the launcher's GPUs.
    DeviceError when they do not go round."""
    device = _flag_value(flags, "device")
    gpus = gpu_share.machine_gpus(environ, device_nodes)
    towers = _towers_per_worker(flags)
    if num_workers < 2 or device == "cpu" or not gpus or towers < 1:
        return [None] * num_workers  # no GPU to share (a GPU run says why itself)
    return [gpu_share.share(task, num_workers, towers, gpus) for task in range(num_workers)]


def free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


_LIBC = ctypes.CDLL(None) if sys.platform.startswith("linux") else None


def _die_with_parent():
    """In the child before exec (no thread of the launcher runs then): its own
    process group, and killed if the launcher dies (Linux PR_SET_PDEATHSIG),
    so even a killed launcher leaves no worker behind."""
    os.setsid()
    if _LIBC is not None:
        _LIBC.prctl(1, signal.SIGKILL)


class Workers:
    """One start of the N workers: their processes and output threads."""

    def __init__(self, options, flags, write, shares, count=None, on_first_step=None):
        """count: workers to start (default --num_workers); on_first_step:
        called once with the chief's first step line (the elastic launch's
        recovery time)."""
        self.write = write
        self.on_first_step = on_first_step
        self.procs, self.threads = [], []
        self._chief_trains = False  # the chief printed a step: its signal handlers are set
        self._for_chief = None  # a signal the chief gets once it trains
        self._chief_lock = threading.Lock()
        self._said = set()  # tasks that printed their lost-peer line
        self._ended = set()  # of those, the ones stopped here while they waited
        n = options.num_workers if count is None else count
        cluster = []
        if n > 1:
            hosts = ",".join(f"127.0.0.1:{port}" for port in free_ports(n))
            cluster = [f"--worker_hosts={hosts}", "--cluster_source=flags"]
            if not any(f.startswith("--variable_update=") for f in flags):
                cluster.append("--variable_update=collective_all_reduce")
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        for task in range(n):
            args = [sys.executable, "-m", options.module, *flags, *cluster]
            if n > 1:
                args.append(f"--task_index={task}")
            own = env if shares[task] is None else dict(env, **{gpu_share.VISIBLE: shares[task]})
            proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, env=own, text=True,
                                    errors="replace", preexec_fn=_die_with_parent)
            self.procs.append(proc)
            gpus = "" if shares[task] is None else f", GPUs {shares[task]}"
            write(f"[launcher] task {task}: pid {proc.pid}{gpus}")
        # The output threads start after the last fork (preexec_fn and threads).
        for task, proc in enumerate(self.procs):
            thread = threading.Thread(target=self._copy, args=(task, proc), daemon=True)
            thread.start()
            self.threads.append(thread)

    def _copy(self, task, proc):
        for line in proc.stdout:
            self.write(f"[task {task}] {line.rstrip()}")
            if peer_loss.EXIT_WORDS in line:
                self._said.add(task)
            if task == 0 and not self._chief_trains and STEP_LINE.match(line):
                if self.on_first_step is not None:
                    self.on_first_step(line)
                with self._chief_lock:
                    self._chief_trains, signum, self._for_chief = True, self._for_chief, None
                if signum is not None:
                    self._signal_chief(signum)

    def signal_chief_once_it_trains(self, signum):
        """Sends `signum` to the chief now if it trains, else at its first step
        line: by then its handlers (towertrain.callbacks.cluster_stop) are set,
        and its request reaches every worker in the step's sum."""
        with self._chief_lock:
            if not self._chief_trains:
                self._for_chief = signum
                return
        self._signal_chief(signum)

    def _signal_chief(self, signum):
        if self.procs[0].poll() is None:
            try:
                os.kill(self.procs[0].pid, signum)
            except ProcessLookupError:
                pass

    def signal(self, signum):
        for proc in self.procs:
            if proc.poll() is None:
                try:
                    os.kill(proc.pid, signum)
                except ProcessLookupError:
                    pass

    def kill(self):
        """SIGKILLs every worker still running (its whole process group) and reaps all."""
        for proc in self.procs:
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        for proc in self.procs:
            proc.wait()
        for thread in self.threads:
            thread.join(timeout=5)
        self._remove_empty_logs()

    def _remove_empty_logs(self):
        """A worker killed outright (kill -9, or here after the grace) leaves
        its log file empty: nothing to read, so it goes."""
        for task, proc in enumerate(self.procs):
            worker_log.remove_if_empty(worker_log.path_of(task, proc.pid))

    def supervise(self, grace=STOP_GRACE_SECS, poll=None):
        """Waits until all exited 0 (returns 0, None) or one failed: returns
        (status, task) of that first failure, once the others have exited.
        They are given `grace` seconds (--stop_grace_secs) to stop by
        themselves, each saying in one line which peer it lost (the chief
        saving its last step, towertrain.engine.distributed.peer_loss); the
        ones still running then are killed. poll: called between checks
        (the elastic launch's requests, outside any signal handler)."""
        first, deadline = None, None
        while True:
            if poll is not None:
                poll()
            running = 0
            for task, proc in enumerate(self.procs):
                code = proc.poll()
                if code is None:
                    running += 1
                elif code != 0 and first is None:
                    first = (128 - code if code < 0 else code), task
                    deadline = time.monotonic() + grace
            if first is not None and running and self._only_waiting():
                running = 0
            if first is not None and (not running or time.monotonic() >= deadline):
                self.kill()
                return first
            if not running:
                for thread in self.threads:
                    thread.join(timeout=5)
                self._remove_empty_logs()
                return 0, None
            time.sleep(POLL_SECONDS)

    def _only_waiting(self):
        """Whether every worker still running has said its lost-peer line: it
        then only waits so that the others' health checks still see it
        (peer_loss.LINGER_SECS), and once all have said theirs none is needed.
        Those are then stopped here and counted as the survivors they are."""
        running = {task for task, proc in enumerate(self.procs) if proc.poll() is None}
        if not running <= self._said:
            return False
        self._ended |= running
        return True

    def statuses(self):
        """Each task's exit status (128 + N for a signal N), None while running;
        a survivor stopped here while it waited: peer_loss.EXIT_STATUS."""
        return [None if p.poll() is None else
                peer_loss.EXIT_STATUS if task in self._ended else
                128 - p.returncode if p.returncode < 0 else p.returncode
                for task, p in enumerate(self.procs)]


def _say(lock):
    def write(line):
        with lock:
            print(line, flush=True)
    return write


def main(argv=None):
    options, flags = parse(sys.argv[1:] if argv is None else argv)
    try:
        shares = gpu_shares(options.num_workers, flags, os.environ)
    except DeviceError as err:
        return common.fail(str(err), command=COMMAND)
    write = _say(threading.Lock())
    if options.max_restarts and not any(f.startswith("--train_dir=") for f in flags):
        write("[launcher] note: without --train_dir a restart starts from the beginning")
    state = {"workers": None, "signals": 0}

    def forward(signum, frame):
        del frame
        state["signals"] += 1
        write(f"[launcher] received {signal.Signals(signum).name}: forwarded to every worker")
        if state["workers"] is not None:
            state["workers"].signal(signum)

    previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGINT, signal.SIGTERM)}
    restarts = 0
    try:
        if options.min_workers is not None:
            def start(count, on_first_step):
                return Workers(options, flags, write, gpu_shares(count, flags, os.environ),
                               count, on_first_step)
            return elastic.ElasticRun(options, lambda name: _flag_value(flags, name), write,
                                      start, state,
                                      lambda count: global_batch_refusal(flags, count)).run()
        while True:
            state["workers"] = Workers(options, flags, write, shares)
            status, task = state["workers"].supervise(options.stop_grace_secs)
            if status == 0:
                return 0
            write(f"[launcher] task {task} failed (exit status {status}); stopped every worker")
            if state["signals"] or restarts >= options.max_restarts:
                return status
            restarts += 1
            write(f"[launcher] restart {restarts} of {options.max_restarts}: starting "
                  f"{options.num_workers} workers again")
    finally:
        if state["workers"] is not None:
            state["workers"].kill()
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def run():
    sys.exit(main())
