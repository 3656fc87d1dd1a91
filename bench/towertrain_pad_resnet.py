"""`python -m towertrain` with the CIFAR ResNets' parameter-free-shortcut
variants registered as resnet20_pad .. resnet110_pad and resnet20_v2_pad ..:
the network tf_cnn_benchmarks builds (He et al. 2015 option A), for
`bench_vs_tfcnn.py --same_network`. A user's own script registers a model
the same way (README: Library use).

    python bench/towertrain_pad_resnet.py --model=resnet20_pad [towertrain flags]
"""
import towertrain
from towertrain.commands.train import run
from towertrain.models.resnet_cifar import resnet_cifar

DEPTHS = (20, 32, 44, 56, 110)


def register():
    for depth in DEPTHS:
        for version, suffix in ((1, ""), (2, "_v2")):
            towertrain.register_model(
                f"resnet{depth}{suffix}_pad", resnet_cifar(depth, version, shortcut="pad"),
                default_image_size=32, default_batch_size=64, default_learning_rate=0.1,
                default_dataset="cifar10")


if __name__ == "__main__":
    register()
    run()
