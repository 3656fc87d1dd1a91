"""Small image sizes the zoo's tests build each model at (fast, same variables
for the conv stacks; only flatten-fed dense kernels shrink)."""
from towertrain import models

# The smallest sizes these architectures take: alexnet's 11x11/4 conv and
# three valid 3x3/2 pools need 67; inception3 needs 75.
_SMALL = {"alexnet": 67, "inception3": 75, "lenet": 28}


def small_image_size(name):
    if name in _SMALL:
        return _SMALL[name]
    return 32 if models.get_spec(name).default_dataset == "cifar10" else 64 \
        if name.startswith("resnet") else 32
