"""What `python -m towertrain.scaling` reports: the table, the raw numbers
(JSON, CSV) and the plot of images/sec vs devices, a line per mode.

A configuration here is anything with .mode, .devices, .global_batch,
.variable_update, .all_reduce_spec, .images_per_sec (one value per round),
.median and .spread (towertrain.commands.scaling.Configuration). matplotlib comes with
`pip install 'towertrain[plot]'`; without it write_plot returns False and the
command says how to get the plot.
"""
import csv
import json

from towertrain.engine.process.settings import describe_pool

KERAS_MODE = "keras_mirrored"


def speedups(configs):
    """{(mode, devices): median / the same mode's 1-device median}."""
    one = {c.mode: c.median for c in configs if c.devices == 1}
    return {(c.mode, c.devices): c.median / one[c.mode] for c in configs}


def header(settings):
    s = settings
    return [f"towertrain.scaling: {s['model']} on {s['device']} ({s['data_format']}), "
            f"synthetic data, TensorFlow {s['tensorflow']}; median of {s['rounds']} "
            f"interleaved round(s) of {s['num_batches']} steps per configuration",
            f"weak scaling: batch per device fixed at {s['batch_size']}, "
            f"global batch = {s['batch_size']} x devices",
            f"{KERAS_MODE}: Keras fit + tf.distribute.MirroredStrategy "
            f"({s['keras_batch_norm']} batch norm)",
            "speed-up: vs 1 device of the same mode; efficiency = speed-up / devices; "
            "spread = (max - min) / median over the rounds",
            f"intra-op threads: {describe_pool(s.get('intra_op_threads'))} for every "
            "configuration (one process; --num_intra_threads sets it)"]


def table_lines(configs, settings):
    ratio = speedups(configs)
    width = max(len("mode"), *(len(c.mode) for c in configs))
    lines = header(settings) + ["", f"{'mode':<{width}}  devices  global batch  images/sec  "
                                    "speed-up  efficiency  spread"]
    for i, c in enumerate(configs):
        if i and c.mode != configs[i - 1].mode:
            lines.append("")
        up = ratio[(c.mode, c.devices)]
        lines.append(f"{c.mode:<{width}}  {c.devices:>7}  {c.global_batch:>12}  "
                     f"{c.median:>10.1f}  {up:>7.2f}x  {up / c.devices:>10.1%}  "
                     f"{c.spread:>6.1%}")
    return lines + warnings(configs, settings, ratio)


# Above this an efficiency is the timing's noise, not a speed-up.
PLAUSIBLE_EFFICIENCY = 1.05


def warnings(configs, settings, ratio):
    """Notes under the table on numbers it cannot vouch for: one round (no
    spread to judge them by), and an efficiency above 100% (a 1-device row that
    ran slow, not N devices more than N times faster)."""
    notes = []
    if settings["rounds"] < 2:
        notes.append(f"warning: {settings['rounds']} round: the spread cannot be measured, "
                     "so nothing says how far these numbers can be trusted; use --rounds=3 "
                     "or more")
    high = [(ratio[(c.mode, c.devices)] / c.devices, c) for c in configs if c.devices > 1
            and ratio[(c.mode, c.devices)] / c.devices > PLAUSIBLE_EFFICIENCY]
    if high:
        efficiency, c = max(high, key=lambda pair: pair[0])
        notes.append(f"warning: efficiency above 100% ({efficiency:.1%}: {c.mode} on "
                     f"{c.devices} devices) is timing noise or a slow 1-device row, not a "
                     "real speed-up; rerun with more --rounds (and --num_batches)")
    return [""] + notes if notes else []


def write_data(configs, settings, stem):
    """stem.json (settings, every configuration with its rounds and summary) and
    stem.csv (one row per configuration and round)."""
    ratio = speedups(configs)
    records = [{"mode": c.mode, "variable_update": c.variable_update or "keras_fit",
                "all_reduce_spec": c.all_reduce_spec, "devices": c.devices,
                "global_batch": c.global_batch, "images_per_sec": c.images_per_sec,
                "median_images_per_sec": c.median, "speedup": ratio[(c.mode, c.devices)],
                "efficiency": ratio[(c.mode, c.devices)] / c.devices, "spread": c.spread}
               for c in configs]
    with open(stem + ".json", "w", encoding="utf-8") as f:
        json.dump({"settings": settings, "configurations": records}, f, indent=1)
    with open(stem + ".csv", "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["mode", "variable_update", "all_reduce_spec", "devices",
                         "batch_per_device", "global_batch", "round", "images_per_sec"])
        for c in configs:
            for r, value in enumerate(c.images_per_sec, 1):
                writer.writerow([c.mode, c.variable_update or "keras_fit",
                                 c.all_reduce_spec or "", c.devices, settings["batch_size"],
                                 c.global_batch, r, f"{value:.3f}"])


def write_plot(path, configs, settings):
    """Writes a PNG of median images/sec vs devices (bars: min to max over the
    rounds), a line per mode, and a dotted line of linear scaling from the
    first mode's 1-device speed. Returns False if matplotlib is not installed."""
    try:  # an optional dependency (the plot extra): imported only when plotting
        from matplotlib.figure import Figure
    except ImportError:
        return False
    figure = Figure(figsize=(8, 5), dpi=120)
    axes = figure.add_subplot()
    by_mode = {}
    for config in configs:
        by_mode.setdefault(config.mode, []).append(config)
    counts = sorted({config.devices for config in configs})
    first = next(iter(by_mode.values()))
    if first[0].devices == 1 and len(counts) > 1:
        axes.plot(counts, [first[0].median * n for n in counts], ":", color="gray",
                  label=f"linear ({first[0].mode} 1-device x devices)")
    for i, (mode, rows) in enumerate(by_mode.items()):
        medians = [c.median for c in rows]
        low = [c.median - min(c.images_per_sec) for c in rows]
        high = [max(c.images_per_sec) - c.median for c in rows]
        shift = (i - (len(by_mode) - 1) / 2) * 0.02  # keeps the modes' bars apart
        axes.errorbar([c.devices + shift for c in rows], medians, yerr=[low, high],
                      marker="o", capsize=3, label=mode)
    s = settings
    axes.set_title(f"{s['model']} on {s['device']} ({s['data_format']}): "
                   f"{s['batch_size']} images per device (weak scaling), "
                   f"median of {s['rounds']} round(s)", fontsize=10)
    axes.set_xlabel(f"devices (global batch = {s['batch_size']} x devices)")
    axes.set_ylabel("images/sec (bars: min to max over rounds)")
    axes.set_xticks(counts)
    axes.set_ylim(bottom=0)
    axes.grid(True, alpha=0.3)
    axes.legend(fontsize=8, loc="best")
    figure.tight_layout()
    figure.savefig(path, format="png")
    return True
