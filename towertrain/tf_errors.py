"""The texts of TensorFlow's errors that towertrain reads, and the prefixes of
its own in-graph assertions, each named once.

A failed step reaches Python as TensorFlow's text: towertrain turns it into
one line in the user's terms, and an in-graph check's failure into the error
it stands for. Every module that builds such an assertion or reads such a
text takes its words from here, so the builder and the reader cannot drift
apart. Imports nothing of towertrain (the lowest wing, beside errors.py).
"""
import re

# Prefixes of towertrain's own tf.debugging.Assert data: the first item of
# each assertion, which identifies it when the step fails.
LABEL_CHECK = "towertrain label check:"  # input_pipeline.arrays.label_check
LOSS_CHECK = "towertrain loss check:"  # engine.contract.in_step.per_example_losses
SHARD_LABEL_CHECK = "label out of range [0, num_classes) after offset; shard:"  # imagenet.parse
SHARD_JPEG_CHECK = "image/encoded is not a JPEG; shard:"  # imagenet.parse

# tf.debugging.Assert's message: 'assertion failed: [first item] [second] ...'.
ASSERTION_FAILED = "assertion failed: "
# A graph-mode failure names the node that raised it.
DETECTED_AT_NODE = "Detected at node"
FAILED_NODE = re.compile(re.escape(DETECTED_AT_NODE) + r" '?([^\s']+?)'?(?: defined at|\s|$)")
# tf.data names the iterator's node or its pipeline in errors raised while reading.
ITERATOR_NODE = "IteratorGetNext"
ITERATOR_PIPELINE = "Iterator::"
# A tf.data function's error: 'Error in user-defined function passed to
# MapDataset:1 transformation with iterator: Iterator::Root::...: <what>'.
DATASET_FUNCTION = re.compile(r"with iterator: \S+: (.*)$")
# A checkpoint data file whose bytes changed since it was written.
CHECKSUM_MISMATCH = "Checksum does not match"
# Decorations around the reason: '{{function_node ...}}' before it, ' [Op:SaveV2]'
# (and anything after) at its end; '(0) INVALID_ARGUMENT:  ' before each of several.
FUNCTION_NODE = re.compile(r"\{\{.*?\}\}\s*")
OP_SUFFIX = re.compile(r"\s*\[Op:[^\]]*\].*$")
ONE_OF_SEVERAL = re.compile(r"^\(\d+\) [A-Z_]+:\s*")
ROOT_ERRORS = re.compile(r"\d+ root error\(s\) found")
# Lines of a traced error that never say what went wrong.
BOILERPLATE_STARTS = ("File ", "in user code:", "Graph execution error", DETECTED_AT_NODE, "[[",
                      "<stack traces", "Traceback", "^", "The error could be")
# Keras wraps a layer's error: 'Exception encountered when calling X.call().'
# then the message on the next line.
KERAS_CALL = re.compile(r"Exception encountered when calling (\w+)\.call\(\)")

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_RAISED = re.compile(r"^(\w+(?:Error|Exception)): (.*)$")


def is_boilerplate(line):
    """Whether a (stripped) line of TensorFlow's error is only its frame."""
    return line.startswith(BOILERPLATE_STARTS) or bool(ROOT_ERRORS.match(line))


def says_variable_created(text):
    """tf.function's refusal of a variable made on a later call ('... only
    supports singleton tf.Variables created on the first call') and Keras'
    like it: both name a variable and its creation."""
    text = text.lower()
    return "variable" in text and "creat" in text


def assertion_fields(text, prefix):
    """The items after `prefix` of a failed tf.debugging.Assert whose data
    starts with it, as printed ('assertion failed: [prefix] [a] [2 3]' ->
    ['a', '2 3']), or None when no such assertion failed."""
    found = re.search(re.escape(f"{ASSERTION_FAILED}[{prefix}]") + r"((?: \[[^\]]*\])*)", text)
    return re.findall(r"\[([^\]]*)\]", found.group(1)) if found else None


def error_text(err):
    """The line of an exception that says what went wrong: TensorFlow's traced
    errors start 'in user code:' and end with the raised one, which Keras may
    wrap ('Exception encountered when calling X.call().' then the message)."""
    lines = [line.strip() for line in _ANSI.sub("", str(err)).splitlines() if line.strip()]
    raised = [i for i, line in enumerate(lines) if _RAISED.match(line)]
    if raised:
        kind, message = _RAISED.match(lines[raised[-1]]).groups()
        wrapped = KERAS_CALL.match(message)
        if wrapped and raised[-1] + 1 < len(lines):
            return f"{kind} in layer {wrapped.group(1)}: {lines[raised[-1] + 1]}"
        return f"{kind}: {message}"
    useful = [line for line in lines if not is_boilerplate(line)]
    line = OP_SUFFIX.sub("", (useful or lines or [type(err).__name__])[0])
    line = ONE_OF_SEVERAL.sub("", line)
    found = DATASET_FUNCTION.search(line)
    return found.group(1) if found else line
