"""`python -m towertrain` with the CIFAR ResNets' parameter-free-shortcut
variants registered as resnet20_pad .. resnet110_pad and resnet20_v2_pad ..:
the network tf_cnn_benchmarks builds (He et al. 2015 option A), for
`bench_vs_tfcnn.py --same_network`. A user's own script registers a model
the same way (docs/library.md).

    python bench/towertrain_pad_resnet.py --model=resnet20_pad [towertrain flags]
"""
import towertrain
from towertrain.commands.train import run
from towertrain.models import catalog
from towertrain.models.resnet_cifar import build_resnet_cifar

DEPTHS = (20, 32, 44, 56, 110)


def register():
    """Each variant with its registered twin's defaults (the catalog's row)."""
    for depth in DEPTHS:
        for version, suffix in ((1, ""), (2, "_v2")):
            twin = catalog.get_spec(f"resnet{depth}{suffix}")
            towertrain.register_model(
                f"{twin.name}_pad", build_resnet_cifar(depth, version, shortcut="pad"),
                default_image_size=twin.default_image_size,
                default_batch_size=twin.default_batch_size,
                default_learning_rate=twin.default_learning_rate,
                default_dataset=twin.default_dataset, min_image_size=twin.min_image_size,
                weight_decay_filter=twin.weight_decay_filter)


if __name__ == "__main__":
    register()
    run()
