"""What every command line shares: quiet TensorFlow import, one-line errors, help.

Each command (train and --eval, export, scaling) parses absl flags through
`flags_parser`, so --help exits 0 with the command's own text and a bad flag is
one line `<command>: error: ...` with exit status 2, never absl's FATAL log.
"""
import dataclasses
import os
import re
import signal
import sys
import textwrap

from absl import app, flags

from towertrain import tf_import
from towertrain.config import settings, tfcnn_flags
from towertrain.plan.sections import Outputs

HELP_ARGS = ("-h", "-help", "--help", "-?", "-helpshort", "--helpshort")
FULL_HELP_ARGS = ("-helpfull", "--helpfull")


def fail(message, command="towertrain"):
    """Prints `<command>: error: <message>` on stderr; returns the exit status 2."""
    print(f"{command}: error: {message}", file=sys.stderr)
    return 2


def run_app(main, flags_parser, command="towertrain"):
    """absl's app.run of a command, a Ctrl-C outside a training step (while
    TensorFlow imports, the model builds or the checkpoint restores; a step
    has its own handler) one line and status 130 instead of KeyboardInterrupt's
    60-200 line traceback."""
    # A handler of its own rather than Python's KeyboardInterrupt: a library
    # that catches every exception while TensorFlow imports swallowed it, and
    # the run went on to train. It writes to the stderr of the start: the
    # import's start-up lines are caught on fd 2 meanwhile (tf_import).
    stderr = os.dup(2)
    previous = signal.signal(signal.SIGINT, lambda signum, frame: _exit_on_sigint(command,
                                                                                  stderr))
    try:
        app.run(main, flags_parser=flags_parser)
    except KeyboardInterrupt:  # raised where a handler of TensorFlow's took over
        _exit_on_sigint(command, stderr)
    finally:
        signal.signal(signal.SIGINT, previous)
        os.close(stderr)


def _exit_on_sigint(command, stderr):
    sys.stdout.flush()
    os.write(stderr, f"{command}: received SIGINT outside a training step: exiting with status "
                     "130 (a run with --train_dir resumes from its last checkpoint)\n".encode())
    # At once: a TensorFlow interrupted in its import can hang the interpreter's
    # teardown; the kernel frees the train_dir's lock.
    os._exit(130)


def import_tensorflow_quietly():
    """Imports TensorFlow, its C++ start-up lines hidden unless
    TF_CPP_MIN_LOG_LEVEL < 2 (--verbose), then each once (towertrain.tf_import)."""
    tf_import.import_tensorflow()


def _own_args(argv):
    return argv[1:argv.index("--")] if "--" in argv else argv[1:]


def flags_parser(help_text, command="towertrain", full_help=False, friendly_errors=True):
    """An absl `flags_parser` for app.run: --help prints help_text() and exits 0;
    a parse error is one line and exit 2 (rewritten to start with the flag when
    friendly_errors, else absl's first line); then logging is configured."""
    def parse(argv):
        args = _own_args(argv)
        if any(arg.split("=")[0] in HELP_ARGS for arg in args):
            sys.stdout.write(help_text())
            sys.exit(0)
        if any(arg in FULL_HELP_ARGS for arg in args):
            text = help_text()
            if full_help:
                text += "\nAll flags:\n\n" + flags.FLAGS.get_help() + "\n"
            sys.stdout.write(text)
            sys.exit(0)
        try:
            rest = flags.FLAGS(argv)
        except flags.UnrecognizedFlagError as err:
            message = (unknown_flags_message(argv, err) if friendly_errors else str(err))
            sys.exit(fail(message, command))
        except (flags.Error, ValueError) as err:  # ValueError: '--noeval=1'
            message = flag_error_message(err) if friendly_errors else str(err)
            sys.exit(fail(message, command))
        expand_paths(flags.FLAGS)
        configure_logging(flags.FLAGS)
        return rest
    return parse


# Every command's flags that name a file or directory (towertrain's settings,
# export's --output and --saved_model, scaling's --output_dir).
OTHER_PATH_FLAGS = ("output", "saved_model", "output_dir")


def expand_paths(flag_values):
    """A leading `~` in a path flag is the user's home, also where no shell
    expanded it (`--train_dir=~/run` in some shells, a flag file): it created
    ./~/run while the output printed ~/run."""
    for name in settings.PATH_SETTINGS + OTHER_PATH_FLAGS:
        if name in flag_values and isinstance(flag_values[name].value, str):
            flag_values[name].value = settings.expand_path(flag_values[name].value)


def unknown_flags_message(argv, err):
    """Every unknown flag of the command line in one message (absl stops at the
    first): each is dropped and the line parsed again, so a long command is not
    fixed one flag per run."""
    messages, argv = [], list(argv)
    while True:
        messages.append(flag_error_message(err))
        if err.flagvalue not in argv:
            break
        argv.remove(err.flagvalue)
        try:
            flags.FLAGS(argv)
            break
        except flags.UnrecognizedFlagError as again:
            err = again
        except (flags.Error, ValueError):
            break  # another kind of error: the unknown flags come first
    if len(messages) == 1:
        return messages[0]
    # '--modl: unknown flag; did you mean --model? see --help ...' -> '--modl (did you
    # mean --model?)'
    named = []
    for message in messages:
        flag, rest = message.split(": unknown flag; ", 1)
        hint = re.match(r"did you mean (--\S+?)\? ", rest)
        named.append(f"{flag} (did you mean {hint.group(1)}?)" if hint else flag)
    return (f"{len(named)} unknown flags: {', '.join(named)}; see --help for the flags")


def flag_error_message(err):
    """absl's parse errors, rewritten to start with the flag like Params' own."""
    text = str(err).strip().splitlines()[0]
    if isinstance(err, flags.UnrecognizedFlagError):
        suggestion = re.search(r"Did you mean: (.+?) ?\?", text)
        # Never point a typo at a tf_cnn_benchmarks flag that is only refused.
        names = [n for n in (suggestion.group(1).split(", ") if suggestion else [])
                 if n not in tfcnn_flags.REFUSED_NAMES]
        hint = f"did you mean --{', --'.join(names)}? " if names else ""
        return f"--{err.flagname}: unknown flag; {hint}see --help for the flags"
    bad_value = re.match(r"flag --(\w+)=(.*?): ", text)
    if bad_value and bad_value.group(1) in flags.FLAGS:
        flag = flags.FLAGS[bad_value.group(1)]
        choices = getattr(flag.parser, "enum_values", None)
        reason = {"int": "must be an integer", "float": "must be a number",
                  "bool": f"is on/off: use --{flag.name} or --no{flag.name}"}.get(
                      flag.flag_type(), text[bad_value.end():])
        tfcnn = tfcnn_flags.BY_NAME.get(flag.name)
        if tfcnn and tfcnn.type == "float" and flag.flag_type() == "int" and tfcnn.note:
            reason += f" ({tfcnn.note})"  # a tf_cnn_benchmarks float taken whole here
        if choices:
            reason = f"must be one of {', '.join(choices)}"
            migration = tfcnn_flags.value_refusal(flag.name, bad_value.group(2))
            if migration:
                reason += f"; {migration}"
        return f"--{flag.name}={bad_value.group(2)}: {reason}"
    missing = re.match(r"Missing value for flag (--\w+)", text)
    if missing:
        return f"{missing.group(1)}: needs a value ({missing.group(1)}=VALUE)"
    no_value = re.match(r"(--\S+) does not take an argument", text)
    if no_value:
        return f"{no_value.group(1)}: takes no value (an on/off flag)"
    return text


def configure_logging(flag_values):
    """Hides TensorFlow's C++ and absl INFO logging unless --verbose.

    Runs before TensorFlow is imported (TF_CPP_MIN_LOG_LEVEL is read then) and
    before absl.app raises its default --verbosity to INFO, which prints a
    'Sharding callback duration' line for every checkpoint save.
    """
    verbose = "verbose" in flag_values and flag_values.verbose
    if verbose:
        os.environ["TF_CPP_MIN_LOG_LEVEL"] = "0"
    else:
        # 3, not 2: TensorFlow logs harmless fallbacks at ERROR level (e.g.
        # "oneDNN supports DT_UINT8 only on platforms with AVX-512"); real
        # failures reach towertrain as exceptions and are reported as such.
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    if "verbosity" in flag_values and flag_values["verbosity"].using_default_value:
        flag_values.verbosity = 0 if verbose else -1  # INFO / WARNING


def flag_help(flag, width=80, shown_default=None):
    """A flag's --help entry: `--name=default` then its wrapped help text.
    shown_default: what a None default means (settings.shown_default)."""
    text = flag.help
    choices = getattr(flag.parser, "enum_values", None)
    if choices:  # absl prefixes an enum's help with "<a|b>: "
        text = text.split(": ", 1)[-1] + f" One of: {', '.join(choices)}."
    if flag.flag_type() == "bool":
        head = f"  --[no]{flag.name}"
        text += f" (default: {'on' if flag.default else 'off'})"
    elif flag.default is None and shown_default is not None:
        head = f"  --{flag.name}={shown_default}"
    elif flag.default is None:
        head = f"  --{flag.name}"
        if "default" not in text:
            text += " (default: none)"
    else:
        head = f"  --{flag.name}={flag.default}"
    return [head] + textwrap.wrap(text, width, initial_indent=" " * 6,
                                  subsequent_indent=" " * 6)


def outputs_of(params):
    """The plan's Outputs section for `params` (what a run shows and writes),
    for the checks that run before a Trainer builds the whole plan."""
    return Outputs(**{field.name: getattr(params, field.name)
                      for field in dataclasses.fields(Outputs)})
