"""The learning-rate recipe, in one place: which rate a run trains with, that
rate's schedule in steps, and the flags' checks. Pure Python, like the rest of
the plan; each module one job:

    settings.py      the flags (--init_learning_rate, the schedule flags) and
                     their refusals
    source.py        which rate: the flags, the model's recipe, its constant,
                     or the constant a resumed run kept; the recipe's refusals
    schedule.py      LearningRate (the schedule's terms) from the flags
    model_recipe.py  LearningRate from a model's recipe, in tf_cnn_benchmarks'
                     arithmetic

What a model declares (towertrain.models.recipes.LearningRateRecipe) stays
with the models, which never import the engine. The Keras schedule the
optimizer calls is built from a LearningRate by towertrain.recipe.lr_schedule
(the plan imports no TensorFlow).
"""
