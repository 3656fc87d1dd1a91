"""The model catalog: names and defaults without Keras, the same specs as the
registrations it replaced, and a user's register_model() still seen by Params."""
import json
import os
import pkgutil
import subprocess
import sys
import types

import keras
import pytest

import towertrain
from towertrain import Params, ParamsError, models
from towertrain.models import catalog, registry

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# What towertrain/models/__init__.py registered before the catalog (written
# out here, not read from the catalog): name, the builder as it was given,
# image size, batch size, learning rate, dataset, min image size.
BEFORE = [
    ("trivial", lambda: models.build_trivial, 32, 32, 0.005, "cifar10", 1),
    ("cifar_cnn", lambda: models.build_cifar_cnn, 32, 32, 0.01, "cifar10", 10),
    ("alexnet_cifar", lambda: models.build_alexnet_cifar, 32, 128, 0.1, "cifar10", 1),
    ("densenet40_k12", lambda: models.build_densenet_cifar(40, 12), 32, 64, 0.1, "cifar10", 4),
    *[(f"resnet{d}", lambda d=d: models.build_resnet_cifar_v1(d), 32, 64, 0.1, "cifar10", 1)
      for d in (20, 32, 44, 56, 110)],
    *[(f"resnet{d}_v2", lambda d=d: models.build_resnet_cifar_v2(d), 32, 64, 0.1, "cifar10", 1)
      for d in (20, 32, 44, 56, 110)],
    ("lenet", lambda: models.build_lenet, 28, 32, 0.005, "imagenet", 16),
    ("alexnet", lambda: models.build_alexnet, 227, 512, 0.005, "imagenet", 67),
    ("googlenet", lambda: models.build_googlenet, 224, 32, 0.005, "imagenet", 1),
    ("inception3", lambda: models.build_inception3, 299, 32, 0.005, "imagenet", 75),
    ("resnet50", lambda: models.build_resnet_imagenet(50), 224, 64, 0.1, "imagenet", 1),
    ("resnet50_v1.5", lambda: models.build_resnet_imagenet(50, v1_5=True), 224, 64, 0.1,
     "imagenet", 1),
    ("resnet101", lambda: models.build_resnet_imagenet(101), 224, 32, 0.1, "imagenet", 1),
    ("resnet152", lambda: models.build_resnet_imagenet(152), 224, 32, 0.1, "imagenet", 1),
    *[(f"vgg{d}", lambda d=d: models.build_vgg(d), 224, 32, 0.005, "imagenet", 32)
      for d in (11, 16, 19)],
]
HEAVY = ("keras", "tensorflow")

# Run in a fresh process: reads the catalog and validates Params, then lists
# what of Keras and TensorFlow got imported; then touches one Keras-bound name
# so the test can see that the probe does notice Keras when it is imported, and
# imports three builders' modules before their builders are read.
PROBE = """
import json, sys
def heavy():
    return sorted({m.split('.')[0] for m in sys.modules} & {'keras', 'tensorflow'})
from towertrain.models import catalog
import towertrain.config.params
spec = catalog.get_spec('resnet20')
towertrain.config.params.Params(model='resnet20', device='cpu')
seen = {'catalog': catalog.__file__, 'names': catalog.registered_names(),
        'batch': spec.default_batch_size, 'classes': catalog.DATASET_CLASSES,
        'heavy': heavy()}
import importlib, towertrain.models
towertrain.models.FusedBatchNormalization
seen['heavy_after_layers'] = heavy()
# A builder's module imported before the builder's name is read (as building
# imports it): the package's names stay what they are.
for name in ('resnet_cifar', 'resnet_imagenet', 'vgg'):
    importlib.import_module('towertrain.models.' + name)
seen['after_modules'] = [type(getattr(towertrain.models, n)).__name__
                         for n in ('resnet_cifar', 'build_resnet_cifar', 'build_vgg')]
print(json.dumps(seen))
"""


def test_catalog_and_params_import_no_keras():
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")  # the same PYTHONPATH
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    # The code this process runs, not another install's.
    assert os.path.realpath(seen["catalog"]) == os.path.realpath(catalog.__file__)
    assert "resnet20" in seen["names"] and seen["batch"] == 64
    assert seen["classes"] == {"cifar10": 10, "imagenet": 1000}
    assert seen["heavy"] == [], (
        f"reading the catalog and validating Params imported {seen['heavy']}")
    assert seen["heavy_after_layers"] == sorted(HEAVY)  # the probe sees them when they load
    assert seen["after_modules"] == ["module", "function", "function"]


def _same_builder(got, want):
    """The same function, or closures of one factory over equal values."""
    if got is want:
        return True
    cells = lambda f: [c.cell_contents for c in f.__closure__ or ()]  # noqa: E731
    return got.__code__ is want.__code__ and cells(got) == cells(want)


def test_every_built_in_model_has_the_spec_it_had_before():
    assert sorted(s.name for s in catalog.BUILTIN_MODELS) == sorted(row[0] for row in BEFORE)
    for name, builder, image, batch, rate, dataset, min_size in BEFORE:
        # The learning-rate recipes came later (tests/recipe/test_model_recipes.py).
        defaults = catalog.defaults(name)
        defaults.pop("learning_rate_recipe")
        assert defaults == {
            "name": name, "default_image_size": image, "default_batch_size": batch,
            "default_learning_rate": rate, "default_dataset": dataset,
            "weight_decay_filter": None, "min_image_size": min_size}, name
        # Where the catalog says the builder lives is the builder it had.
        assert _same_builder(catalog.get_spec(name).builder.resolve(), builder()), name


def test_catalog_specs_equal_the_packages():
    assert catalog.registered_names() == models.registered_names()
    for name in catalog.registered_names():
        spec = models.get_spec(name)
        assert catalog.defaults(name) == {
            field: getattr(spec, field) for field in catalog.DEFAULT_FIELDS}, name
        assert catalog.get_spec(name).builder is spec.builder, name
    assert catalog.DATASET_CLASSES is models.DATASET_CLASSES
    assert set(catalog.DEFAULT_FIELDS) == {
        "name", "default_image_size", "default_batch_size", "default_learning_rate",
        "default_dataset", "weight_decay_filter", "min_image_size", "learning_rate_recipe"}


def test_a_built_in_model_builds_through_its_builder_ref():
    ref = catalog.get_spec("resnet20").builder
    assert str(ref) == "towertrain.models.resnet_cifar.build_resnet_cifar_v1(20)"
    model = models.build("trivial")
    assert model.output_shape == (None, 10)
    keras.backend.clear_session()


def test_a_user_model_is_known_to_params_and_builds(monkeypatch):
    # A private copy of the registry, so the extra name does not leak to other tests.
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    with pytest.raises(ParamsError, match="--model=catalog_user_net: unknown model"):
        Params(model="catalog_user_net", device="cpu")

    def build_user_net(num_classes, data_format, image_size):
        return keras.Sequential([
            keras.Input(models.input_shape(image_size, data_format)),
            keras.layers.Conv2D(4, 3, data_format=data_format, name="conv"),
            keras.layers.GlobalAveragePooling2D(data_format=data_format, name="pool"),
            keras.layers.Dense(num_classes, name="logits")])

    towertrain.register_model("catalog_user_net", build_user_net, default_image_size=8,
                              default_batch_size=4, default_dataset="cifar10")
    params = Params(model="catalog_user_net", device="cpu")
    assert "catalog_user_net" in catalog.registered_names()
    assert catalog.defaults("catalog_user_net")["default_image_size"] == 8
    assert catalog.get_spec("catalog_user_net").builder is build_user_net
    model = models.build(params.model, data_format="NHWC")
    assert model.output_shape == (None, 10)
    keras.backend.clear_session()


def test_keras_bound_names_resolve_lazily_and_name_no_module():
    for name in models.__all__:
        assert getattr(models, name) is not None, name
    from towertrain.models import FusedBatchNormalization, build_resnet_cifar, build_vgg
    assert isinstance(FusedBatchNormalization, type)
    assert build_vgg is models.build_vgg and build_resnet_cifar is models.build_resnet_cifar
    # Every builder is named build_*, so no package name is also a submodule's
    # (importing a submodule binds it on the package) and the package is a plain module.
    submodules = {name for _, name, _ in pkgutil.iter_modules(models.__path__)}
    assert not submodules & set(models.__all__)
    assert type(models) is types.ModuleType
    models.build("vgg11", image_size=32)
    assert callable(models.build_vgg) and isinstance(models.vgg, types.ModuleType)
    with pytest.raises(AttributeError, match="no attribute 'no_such_model'"):
        models.no_such_model  # noqa: B018
    keras.backend.clear_session()
