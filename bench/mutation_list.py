"""The breakages bench/mutations.py applies: one README claim each, as
(name, file, exact old text, new text, the tests that must fail). Add an
entry whenever a claim gets a test."""
import collections

Mutation = collections.namedtuple("Mutation", "name file old new tests")

T = "tests/"
DOORS = T + "input/test_input_doors.py::"
CHECKS = T + "engine/test_model_checks.py::"
MUTATIONS = [
    # 1. Staging: stage the next batch before taking the current one.
    Mutation(
        "staging_put_before_get", "towertrain/engine/staging.py",
        "        batches = self._get_all()\n        if after_get is not None:\n"
        "            after_get(batches)\n        if put:\n            self._put_all()\n",
        "        if put:\n            self._put_all()\n        batches = self._get_all()\n"
        "        if after_get is not None:\n            after_get(batches)\n",
        [T + "engine/test_staging.py"]),
    # 3. The global batch sliced on /gpu:0 instead of the CPU.
    Mutation(
        "slice_on_gpu0", "input_pipeline/slicing.py",
        '    with tf.device("/cpu:0"):\n        if batch is not None:',
        '    with tf.device("/gpu:0"):\n        if batch is not None:',
        [T + "engine/test_placement_graph.py::test_global_batch_is_sliced_on_cpu_and_each_gpu_gets_only_its_slice"]),
    # 3b. Slices not copied to their devices (every tower reads from the CPU).
    Mutation(
        "slices_stay_on_cpu", "input_pipeline/slicing.py",
        "        with tf.device(device):\n            per_device.append(",
        '        with tf.device("/cpu:0"):\n            per_device.append(',
        [T + "engine/test_placement_graph.py::test_global_batch_is_sliced_on_cpu_and_each_gpu_gets_only_its_slice"]),
    # 4a. parameter_server, --local_parameter_device=gpu: everything on /gpu:0.
    Mutation(
        "ps_gpu_all_on_gpu0", "towertrain/engine/variable_mgr/parameter_server.py",
        "            self.parameter_devices = list(self.devices)",
        '            self.parameter_devices = ["/gpu:0"]',
        [T + "engine/test_placement_graph.py::test_parameter_server_gpu_spreads_variables_sums_and_updates_largest_first"]),
    # 4b. parameter_server, --local_parameter_device=cpu: everything on /gpu:3.
    Mutation(
        "ps_cpu_on_gpu3", "towertrain/engine/variable_mgr/parameter_server.py",
        '            self.parameter_devices = ["/cpu:0"]',
        '            self.parameter_devices = ["/gpu:3"]',
        [T + "engine/test_placement_graph.py::test_parameter_server_cpu_keeps_sums_and_updates_on_cpu0_in_a_gpu_graph",
         T + "engine/test_placement_graph.py::test_parameter_server_cpu_variables_and_slots_live_on_cpu0"]),
    # 4c. Only the variables created on /gpu:3, sums and updates still on the
    # CPU: soft placement moves them back to the CPU in a GPU trace, so only
    # the run with soft placement off can see it.
    Mutation(
        "ps_cpu_variables_created_on_gpu3", "towertrain/engine/variable_mgr/parameter_server.py",
        "            new_variables([t.value], [t], self.parameter_devices[d], True)[0]",
        '            new_variables([t.value], [t], "/gpu:3", True)[0]',
        [T + "engine/test_placement_graph.py::test_parameter_server_cpu_variables_and_slots_live_on_cpu0"]),
    # 4d. parameter_server, cpu: variables on the last device (/cpu:3 here).
    Mutation(
        "ps_cpu_on_last_device", "towertrain/engine/variable_mgr/parameter_server.py",
        '            self.parameter_devices = ["/cpu:0"]',
        "            self.parameter_devices = [self.devices[-1]]",
        [T + "engine/test_placement_graph.py::test_parameter_server_cpu_variables_and_slots_live_on_cpu0"]),
    # 5a. Ring reduce-scatter: each hop's add on the chunk's first device.
    Mutation(
        "ring_adds_on_wrong_device", "towertrain/engine/allreduce/ring.py",
        "                with tf.device(devices[holder]):\n                    partial[c] = partial[c] + chunks[holder][c]",
        "                with tf.device(devices[c]):\n                    partial[c] = partial[c] + chunks[holder][c]",
        [T + "engine/test_placement_graph.py::test_ring_hops_run_on_the_ring_positions"]),
    # 5b. Ring all-gather: the copies made on the owner instead of the receiver.
    Mutation(
        "ring_gather_on_wrong_device", "towertrain/engine/allreduce/ring.py",
        "                with tf.device(devices[holder]):\n                    gathered[holder][c] = tf.identity(",
        "                with tf.device(devices[owner]):\n                    gathered[holder][c] = tf.identity(",
        [T + "engine/test_placement_graph.py::test_ring_hops_run_on_the_ring_positions"]),
    # 5c. Ring: a hop adds the previous holder's piece instead of its own.
    Mutation(
        "ring_adds_wrong_piece", "towertrain/engine/allreduce/ring.py",
        "partial[c] = partial[c] + chunks[holder][c]",
        "partial[c] = partial[c] + chunks[(holder - 1) % n][c]",
        [T + "engine/test_placement_graph.py::test_ring_hops_run_on_the_ring_positions"]),
    # 2. Batch-norm moving statistics from the last tower instead of tower 0.
    Mutation(
        "bn_stats_from_last_tower", "towertrain/engine/variable_mgr/base.py",
        "    for i, values in enumerate(tower_non_trainable):",
        "    for i, values in reversed(list(enumerate(tower_non_trainable))):",
        [T + "engine/test_batch_norm_numbers.py"]),
    # 2b. replicated: each copy keeps its own tower's statistics (copies drift).
    Mutation(
        "replicated_bn_each_copy_its_own", "towertrain/engine/variable_mgr/replicated.py",
        "                update = functools.partial(self._update, i, clipped, source)",
        "                update = functools.partial(self._update, i, clipped,\n"
        "                                           tower_non_trainable[i] or source)",
        [T + "engine/test_batch_norm_numbers.py"]),
    # 2c. independent: every copy takes tower 0's statistics.
    Mutation(
        "independent_bn_from_tower0", "towertrain/engine/variable_mgr/independent.py",
        "assign_all(self._non_trainable[i], tower_non_trainable[i])",
        "assign_all(self._non_trainable[i], tower_non_trainable[0])",
        [T + "engine/test_batch_norm_numbers.py"]),
    # 7a. The fused layer's unknown-batch path raises.
    Mutation(
        "fused_bn_unknown_batch_raises", "models/layers.py",
        "            shape = tf.shape(inputs)\n",
        '            raise ValueError("batch size unknown")\n',
        [T + "engine/test_batch_norm_numbers.py"]),
    # 7b. The fused layer's unknown-batch path drops its variance correction.
    Mutation(
        "fused_bn_unknown_batch_no_variance_correction", "models/layers.py",
        "            variance = unbiased_variance * (count - 1.0) / tf.maximum(count, 1.0)",
        "            variance = unbiased_variance",
        [T + "engine/test_batch_norm_numbers.py"]),
    # 7c. The same on the static-shape path.
    Mutation(
        "fused_bn_static_batch_no_variance_correction", "models/layers.py",
        "            variance = unbiased_variance * ((count - 1.0) / max(count, 1.0))",
        "            variance = unbiased_variance",
        [T + "engine/test_batch_norm_numbers.py"]),
    # 6a. CIFAR training augmentation reduced to standardization.
    Mutation(
        "cifar_train_standardize_only", "input_pipeline/preprocessing.py",
        "    image = tf.pad(image, [[CIFAR_PAD, CIFAR_PAD], [CIFAR_PAD, CIFAR_PAD], [0, 0]])\n"
        "    image = tf.image.stateless_random_crop(image, [CIFAR_SIZE, CIFAR_SIZE, 3], crop_seed)\n"
        "    image = tf.image.stateless_random_flip_left_right(image, flip_seed)\n",
        "",
        [T + "input/test_preprocessing.py"]),
    # 6b. CIFAR training without the flip.
    Mutation(
        "cifar_train_no_flip", "input_pipeline/preprocessing.py",
        "    image = tf.image.stateless_random_flip_left_right(image, flip_seed)\n"
        "    return tf.image.per_image_standardization(image)",
        "    return tf.image.per_image_standardization(image)",
        [T + "input/test_preprocessing.py"]),
    # 6c. CIFAR training crop without the padding (the crop is the whole image).
    Mutation(
        "cifar_train_no_pad", "input_pipeline/preprocessing.py",
        "    image = tf.pad(image, [[CIFAR_PAD, CIFAR_PAD], [CIFAR_PAD, CIFAR_PAD], [0, 0]])\n",
        "",
        [T + "input/test_preprocessing.py"]),
    # 6d. One fixed seed for every example's crop and flip.
    Mutation(
        "cifar_augmentation_seed_fixed", "input_pipeline/preprocessing.py",
        "    crop_seed, flip_seed = tf.unstack(_split_seed(seed, 2))",
        "    crop_seed, flip_seed = tf.unstack(_split_seed(tf.constant([7, 7]), 2))",
        [T + "input/test_preprocessing.py"]),
    # 6e. CIFAR eval augmented too (deterministically).
    Mutation(
        "cifar_eval_augmented", "input_pipeline/preprocessing.py",
        "def cifar_eval(image):\n    return tf.image.per_image_standardization(image)",
        "def cifar_eval(image):\n    return cifar_train(image, tf.constant([1, 2], tf.int64))",
        [T + "input/test_preprocessing.py"]),
    # 6f. ImageNet training preprocessing replaced by the eval path.
    Mutation(
        "imagenet_train_is_eval", "input_pipeline/preprocessing.py",
        "    box_seed, flip_seed = tf.unstack(_split_seed(seed, 2))\n",
        "    return imagenet_eval(encoded, image_size)\n",
        [T + "input/test_preprocessing.py"]),
    # 6g. ImageNet training without the flip.
    Mutation(
        "imagenet_train_no_flip", "input_pipeline/preprocessing.py",
        "    image = tf.image.stateless_random_flip_left_right(image, flip_seed)\n"
        "    return tf.clip_by_value(image, 0.0, 255.0) / 127.5 - 1.0",
        "    return tf.clip_by_value(image, 0.0, 255.0) / 127.5 - 1.0",
        [T + "input/test_preprocessing.py"]),
    # 6h. ImageNet eval crop fraction changed (central 100% instead of 87.5%).
    Mutation(
        "imagenet_eval_no_central_crop", "input_pipeline/preprocessing.py",
        "    image = tf.image.central_crop(image, IMAGENET_EVAL_CROP)\n",
        "",
        [T + "input/test_preprocessing.py"]),
    # 8a. Optimizer slot discovery disabled: checkpoints hold no slots.
    Mutation(
        "checkpoint_optimizer_slots_empty", "towertrain/state/checkpoint.py",
        "    slots = {id(v): {} for _, v in prefixes}\n",
        "    slots = {id(v): {} for _, v in prefixes}\n    return slots\n",
        [T + "state/test_checkpoint_files.py"]),
    # 8b. A restore does not copy the slots to the other replicas.
    Mutation(
        "restore_does_not_sync_slots", "towertrain/state/checkpoint.py",
        "                    if name in source and slot is not source[name]:\n"
        "                        slot.assign(source[name])",
        "                    if name in source and slot is not source[name]:\n"
        "                        pass",
        [T + "state/test_checkpoint_files.py"]),
    # 8c. A failed restore writes the fresh state over the damaged checkpoint.
    Mutation(
        "failed_restore_rewrites_checkpoint", "towertrain/state/checkpoint.py",
        "    except (tf.errors.OpError, ValueError, IndexError) as err:  # IndexError: short file\n",
        "    except (tf.errors.OpError, ValueError, IndexError) as err:  # IndexError: short file\n"
        "        checkpoint.write(path)\n",
        [T + "state/test_checkpoint_files.py::test_damaged_latest_checkpoint_fails_and_no_byte_changes"]),
    # --max_ckpts_to_keep not passed on (the manager keeps its default, 5).
    Mutation(
        "max_ckpts_to_keep_ignored", "towertrain/callbacks/__init__.py",
        "saver = CheckpointSaver(Checkpointer(trainer, p.train_dir, p.max_ckpts_to_keep),",
        "saver = CheckpointSaver(Checkpointer(trainer, p.train_dir),",
        [T + "commands/test_cli_checkpoints.py::test_max_ckpts_to_keep_leaves_exactly_the_last_checkpoints"]),
    # --eval --checkpoint=PATH ignored: the latest checkpoint is evaluated.
    Mutation(
        "eval_checkpoint_flag_ignored", "towertrain/commands/evaluate.py",
        "    path = ckpt_lib.resolve(p.train_dir, p.checkpoint)",
        "    path = ckpt_lib.resolve(p.train_dir, None)",
        [T + "commands/test_cli_checkpoints.py::test_eval_checkpoint_flag_evaluates_that_older_checkpoint"]),
    # --save_model_secs ignored.
    Mutation(
        "save_model_secs_ignored", "towertrain/callbacks/checkpointing.py",
        "        elif self.save_secs and self._pending_step is None and (",
        "        elif False and self.save_secs and self._pending_step is None and (",
        [T + "commands/test_cli_checkpoints.py::test_save_model_secs_saves_during_the_run"]),
    # --save_model_secs saves every step.
    Mutation(
        "save_model_secs_every_step", "towertrain/callbacks/checkpointing.py",
        "                time.monotonic() - self._last_save_time >= self.save_secs):",
        "                time.monotonic() - self._last_save_time >= 0):",
        [T + "commands/test_cli_checkpoints.py::test_save_model_secs_saves_during_the_run"]),
    # 9. Eval scores the training split instead of test_batch.bin.
    Mutation(
        "eval_reads_train_split", "input_pipeline/cifar10.py",
        "    files = find_files(data_dir, train=False)\n    num_examples = sum(check_file(f) "
        "for f in files)\n\n    def eval_map",
        "    files = find_files(data_dir, train=True)\n    num_examples = sum(check_file(f) "
        "for f in files)\n\n    def eval_map",
        [T + "state/test_eval_checked.py"]),
    # 9b. An input without an eval split silently scores something else.
    Mutation(
        "eval_missing_split_not_an_error", "towertrain/engine/evaluation.py",
        '        raise InputError(f"cannot evaluate: {err}") from err',
        "        return None",
        [T + "state/test_eval_checked.py::test_missing_test_split_is_an_error_naming_the_file",
         T + "state/test_eval_checked.py::test_an_input_without_an_eval_split_is_an_error_not_a_stand_in"]),
    # Exact resume with staging: checkpoints taken with batches still staged.
    Mutation(
        "staging_ignores_save_fences", "towertrain/engine/staging.py",
        "        ahead = [f for f in self._fences if f > self.consumed]",
        "        ahead = []",
        [T + "state/test_resume_epochs.py::test_every_example_once_per_epoch_across_an_interruption"]),
    # Non-finite gradients applied anyway.
    Mutation(
        "nonfinite_step_applied", "towertrain/engine/tower.py",
        "    return tf.reduce_all(tf.stack(checks))",
        "    return tf.constant(True)",
        [T + "callbacks/test_divergence.py::test_nan_gradients_with_a_finite_loss_apply_nothing_on_any_copy"]),
    # Every tower draws tower 0's dropout masks.
    Mutation(
        "towers_share_dropout_masks", "towertrain/engine/tower.py",
        "    if tower == 0 or not indices:",
        "    if True:",
        [T + "engine/test_dropout_towers.py::test_towers_draw_independent_dropout_masks"]),
    # Sync batch norm: each tower differentiates only its own loss (misses
    # what its slice contributed to the other towers' statistics).
    Mutation(
        "sync_bn_gradient_of_own_loss_only", "towertrain/engine/tower.py",
        "    grads = tf.gradients([result.scaled for _, _, result in traced], flat,\n"
        "                         unconnected_gradients=tf.UnconnectedGradients.ZERO)",
        "    grads = [g for trainable, _, result in traced for g in tf.gradients(\n"
        "        result.scaled, trainable, unconnected_gradients=tf.UnconnectedGradients.ZERO)]",
        [T + "engine/test_sync_batch_norm.py"]),
    # Sync batch norm: the cross-tower sum hands each tower its own values back.
    Mutation(
        "sync_bn_no_cross_tower_sum", "towertrain/engine/lockstep.py",
        "            return list(self._result)",
        "            return list(tensors)",
        [T + "engine/test_sync_batch_norm.py"]),
    # Epoch seeds: the shuffle reshuffles from a generator carried across epochs.
    Mutation(
        "epoch_shuffle_not_seeded_by_epoch", "input_pipeline/arrays.py",
        "            data = seeded_shuffle(data, buffer_size, epoch_seed(seed, epoch, SHUFFLE))",
        "            data = data.shuffle(buffer_size)",
        [T + "input/test_input_readers.py"]),
    # The epoch shuffle under a graph seed of 0 (--tf_random_seed=0).
    Mutation(
        "epoch_shuffle_uses_the_graph_seed", "input_pipeline/arrays.py",
        "    graph_seed, graph.seed = graph.seed, None\n", "    graph_seed = graph.seed\n",
        [T + "input/test_input_readers.py::"
         "test_shuffled_order_is_set_by_the_input_seed_alone_even_under_graph_seed_0"]),
    # Queue input: a resumed run's feeders start again at the first batch.
    Mutation(
        "queue_input_resumes_from_the_first_batch", "input_pipeline/queue_input.py",
        "        self._batches = self._all_batches(skip=step)",
        "        self._batches = self._all_batches(skip=0)",
        [T + "state/test_resume_epochs.py::test_every_example_once_per_epoch_across_an_interruption"]),
    # Seeing the run (issue 11).
    Mutation(
        "gradient_norm_left_loss_scaled", "towertrain/engine/step_outputs.py",
        "            summed = [g / tf.cast(grad_scale, g.dtype) for g in summed]\n", "",
        [T + "callbacks/test_summaries.py::test_gradient_norm_and_histograms_are_the_true_unscaled_gradient"]),
    Mutation(
        "standalone_eval_writes_no_summaries", "towertrain/commands/evaluate.py",
        "        summaries.write_eval_result(logdir, step, result)\n", "        pass\n",
        [T + "callbacks/test_summaries.py::"
         "test_a_standalone_eval_writes_its_result_under_eval_at_the_checkpoint_step"]),
    Mutation(
        "input_wait_counts_only_the_staging_overrun", "towertrain/engine/step_outputs.py",
        '    return (clock["ready"] - clock["start"]) + overrun', "    return overrun",
        [T + "input/test_input_wait.py::test_an_input_bound_run_reports_its_true_wait_share",
         T + "input/test_input_wait.py::test_a_balanced_run_reports_about_half"]),
    Mutation(
        "scaling_skips_collective_all_reduce", "towertrain/commands/scaling.py",
        '             ("collective_all_reduce", "collective_all_reduce", None),\n', "",
        [T + "commands/test_scaling.py::test_table_has_exactly_a_row_per_configuration"]),
    # Library door (issue 13): labels and losses checked in the user's terms.
    Mutation(
        "door_dataset_unchecked", "input_pipeline/arrays.py",
        '    result.door = "from_dataset"\n', "",
        [DOORS + "test_labels_outside_the_models_classes_fail_the_step_naming_them",
         DOORS + "test_a_bad_label_in_the_first_batch_with_staging_on"]),
    Mutation(
        "door_generator_unchecked", "input_pipeline/arrays.py",
        '    result.door = "from_generator"\n', "",
        [DOORS + "test_labels_outside_the_models_classes_fail_the_step_naming_them"]),
    Mutation(
        "label_check_upper_bound_dropped", "input_pipeline/arrays.py",
        "    in_range = tf.logical_and(low >= 0, high < num_classes)", "    in_range = low >= 0",
        [DOORS + "test_labels_outside_the_models_classes_fail_the_step_naming_them"]),
    Mutation(
        "label_check_error_not_converted", "towertrain/engine/step.py",
        "            if found is not None:\n                raise found from err\n", "",
        [DOORS + "test_labels_outside_the_models_classes_fail_the_step_naming_them",
         CHECKS + "test_a_custom_loss_of_the_wrong_length_on_dynamic_slices"]),
    Mutation(
        "generator_one_epoch_only", "input_pipeline/arrays.py",
        "    batches = epoch_batches(dataset, global_batch, num_epochs)\n    result = DatasetInput(",
        "    batches = epoch_batches(dataset, global_batch, 1)\n    result = DatasetInput(",
        [DOORS + "test_from_generator_trains_as_from_arrays"]),
    Mutation(
        "loss_check_skipped", "towertrain/engine/tower.py",
        "    if loss_fn is not sparse_softmax_cross_entropy:  # a user's loss: one value per example?",
        "    if False:  # a user's loss: one value per example?",
        [CHECKS + "test_a_custom_loss_that_does_not_return_one_loss_per_example",
         CHECKS + "test_a_custom_loss_of_the_wrong_length_on_dynamic_slices"]),
    Mutation(
        "loss_check_length_ignored", "towertrain/engine/model_checks.py",
        "        if len(got) != 1 or (None not in (got[0], size) and got[0] != size):",
        "        if len(got) != 1:",
        [CHECKS + "test_a_custom_loss_that_does_not_return_one_loss_per_example"]),
    Mutation(
        "loss_dynamic_check_rank_only", "towertrain/engine/model_checks.py",
        "    ok = tf.logical_and(tf.equal(tf.rank(losses), 1),\n"
        "                        tf.equal(tf.size(losses), tf.shape(batch)[0]))",
        "    ok = tf.equal(tf.rank(losses), 1)",
        [CHECKS + "test_a_custom_loss_of_the_wrong_length_on_dynamic_slices"]),
    Mutation(
        "unbuilt_model_not_checked_early", "towertrain/trainer.py",
        "            model_checks.check_built(model, input_source)", "            pass",
        [CHECKS + "test_a_model_that_is_not_built"]),
    Mutation(
        "tower_loss_over_its_own_slice", "towertrain/engine/step.py",
        "            denominator = global_count if self.variables.synchronous else tf.shape(images)[0]",
        "            denominator = tf.shape(images)[0]",
        [DOORS + "test_multi_output_custom_loss_on_two_devices_equals_serial_keras"]),
    Mutation(
        "eval_in_training_mode", "towertrain/engine/evaluation.py",
        "tower_images,\n                                                   training=False)",
        "tower_images,\n                                                   training=True)",
        [DOORS + "test_evaluate_a_user_model_on_user_data"]),
    # Library door (issue 13): BUILD, docs and examples kept honest.
    Mutation(
        "bazel_tests_without_their_helpers", "BUILD",
        '    deps = [":test_support"],', '    deps = [":towertrain"],',
        [T + "package/test_build_file.py::test_every_test_target_can_import_the_test_modules_it_uses"]),
    Mutation(
        "readme_quickstart_flag_misspelled", "README.md",
        "--device=cpu --num_gpus=2 --variable_update=replicated --num_batches=20",
        "--device=cpu --num_gpu=2 --variable_update=replicated --num_batches=20",
        [T + "commands/test_doc_commands.py::test_every_shell_command_is_known_and_its_flags_parse"]),
    Mutation(
        "readme_block_forgets_logical_cpus", "README.md",
        "towertrain.use_logical_cpus(2)     # on CPU", "# towertrain.use_logical_cpus(2)  # on CPU",
        [T + "commands/test_docs.py::test_every_multi_device_cpu_example_and_block_configures_its_devices"]),
    Mutation(
        "readme_callback_never_runs", "README.md",
        "for _ in range(10):                  # your own loop: steps 1..10",
        "for _ in range(100):                  # your own loop",
        [T + "commands/test_docs.py::test_code_block_runs[README.md#0]"]),
    Mutation(
        "private_name_made_public", "towertrain/__init__.py",
        '_EXPORTS = {\n', '_EXPORTS = {\n    "build_model": "towertrain.models",\n',
        [T + "package/test_public_api.py::test_public_names_resolve_and_are_documented"]),
    Mutation(
        "late_devices_error_names_a_private_helper", "towertrain/engine/devices.py",
        "(towertrain.use_logical_cpus({count}) first thing)",
        "(towertrain.engine.devices.ensure_logical_cpus({count}) first thing)",
        [T + "package/test_public_api.py::test_devices_configured_too_late_fail_naming_the_fix"]),
    Mutation(
        "example_callback_never_stops", "examples/custom_callback.py",
        '            self.loop.request_stop(f"loss {result.loss:.3f} < {self.target}")',
        "            pass",
        [T + "package/test_examples.py::test_example_runs_at_tiny_size[custom_callback.py]"]),
    # The engine installs the synchronized moments into the zoo's batch norm.
    Mutation(
        "fused_sync_hook_not_installed", "towertrain/engine/sync_batch_norm.py",
        "        layer.cross_tower_moments = _lockstep_moments\n", "        pass\n",
        [T + "engine/test_sync_batch_norm.py"]),
    # Issue 17: private Keras/TF names live behind private_api. Keras' own batch
    # norm no longer rerouted (its moments stay per tower).
    Mutation(
        "keras_batch_norm_moments_not_rerouted", "towertrain/private_api.py",
        "    layer._moments = functools.partial(fn, layer, original)\n", "",
        [T + "package/test_private_api.py::test_rerouted_moments_are_what_the_layer_normalizes_with"]),
    # A private name that went missing is not reported.
    Mutation(
        "private_name_missing_not_reported", "towertrain/private_api.py",
        "        if not ok:\n            missing.append(name)\n", "",
        [T + "package/test_private_api.py::test_a_missing_name_is_reported"]),
    # Each trace's unused CustomGradient kept every Trainer's graph alive.
    Mutation(
        "traced_update_leaks_its_graph", "towertrain/engine/step.py",
        "            with private_api.forget_custom_gradients():  # else each trace leaks its graph",
        "            with contextlib.nullcontext():  # else each trace leaks its graph",
        [T + "package/test_private_api.py::test_trainers_leave_no_custom_gradient_behind"]),
    # Issue 17: the house. A package left out of setup.py (the wheel lacks it).
    Mutation(
        "wheel_without_callbacks", "setup.py",
        '[f"towertrain.{name}" for name in find_packages("towertrain")]',
        '[f"towertrain.{name}" for name in find_packages("towertrain") if name != "callbacks"]',
        [T + "package/test_wheel.py"]),
    # The engine reaching up into a command.
    Mutation(
        "engine_imports_a_command", "towertrain/engine/evaluation.py",
        "import collections\n", "import collections\nfrom towertrain.commands import common  # noqa\n",
        [T + "package/test_import_structure.py::test_nothing_outside_commands_imports_a_command",
         T + "package/test_import_structure.py::test_arrows_only_point_down"]),
    # Settings defined once (towertrain/config/settings.py): a generated flag
    # drifts from its Params field.
    Mutation(
        "flag_loses_its_default", "towertrain/config/flags.py",
        "            _DEFINE[setting.type](setting.name, setting.default, setting.help)",
        "            _DEFINE[setting.type](setting.name, None, setting.help)",
        [T + "config/test_settings.py::"
         "test_every_params_field_is_a_flag_with_its_default_and_type"]),
    # --eval lets a training-only flag through when it is given at its default.
    Mutation(
        "eval_takes_default_valued_training_flags", "towertrain/config/flags.py",
        "        for flag in TRAINING_ONLY:\n            if flag in explicit:\n",
        "        for flag in TRAINING_ONLY:\n            if flag in explicit and getattr(p, flag)"
        " != params_lib.Params.__dataclass_fields__[flag].default:\n",
        [T + "config/test_settings.py::test_eval_refuses_training_only_flags_through_the_cli",
         T + "config/test_settings.py::"
         "test_check_command_line_refuses_every_training_only_flag_with_eval"]),
    # The scaling command's --help offers flags it refuses (not used / set per
    # configuration) instead of its settings' shared ones.
    Mutation(
        "scaling_help_offers_refused_flags", "towertrain/commands/scaling.py",
        "    fields = [s.name for s in settings.params_settings() if s.name in shared]\n",
        "    fields = [s.name for s in settings.params_settings()]\n",
        [T + "config/test_settings.py::test_scaling_help_offers_exactly_the_shared_flags",
         T + "config/test_settings.py::"
         "test_one_changed_definition_changes_flag_field_group_and_lists_together"]),
    # --gradient_accumulation_steps: the update is not rescaled to the mean over
    # its examples (each micro-batch's loss divided by the nominal global batch).
    Mutation(
        "accumulation_no_rescale", "towertrain/engine/step.py",
        "            ratio = tf.cast(self.nominal, tf.float32) / tf.cast(count, tf.float32)\n",
        "            ratio = tf.constant(1.0)\n",
        [T + "recipe/test_accumulation.py::test_update_equals_one_step_on_its_batches_concatenated",
         T + "recipe/test_accumulation.py::test_full_batches_equal_stock_keras_gradient_accumulation"]),
    # Accumulators never zeroed: the next update adds the previous ones' sums.
    Mutation(
        "accumulators_not_zeroed", "towertrain/engine/accumulate.py",
        "                for total in self.grads[i]:\n                    total.assign(tf.zeros_like(total))\n"
        "        with tf.device(\"/cpu:0\"):\n            totals",
        "        with tf.device(\"/cpu:0\"):\n            totals",
        [T + "recipe/test_accumulation.py::test_update_equals_one_step_on_its_batches_concatenated"]),
    # An epoch's last update does not stop at the epoch's end (always K batches).
    Mutation(
        "accumulation_spans_epochs", "towertrain/recipe/accumulation.py",
        "        if self.batches_per_epoch is None:\n            return self.steps\n"
        "        first = (step",
        "        if True:\n            return self.steps\n        first = (step",
        [T + "recipe/test_accumulation.py::test_update_equals_one_step_on_its_batches_concatenated",
         T + "recipe/test_accumulation.py::test_plan_splits_epochs_into_updates"]),
    # Batch-norm statistics kept only at the update, not after every micro-batch
    # as stock Keras does.
    Mutation(
        "accumulation_statistics_once_per_update", "towertrain/engine/step.py",
        "        accumulate.keep_statistics(self.variables, results)\n", "",
        [T + "recipe/test_accumulation.py::test_full_batches_equal_stock_keras_gradient_accumulation"]),
    # The schedule's epoch counted in batches instead of updates.
    Mutation(
        "accumulation_schedule_in_batches", "towertrain/trainer.py",
        "steps_per_epoch=self.accumulation.updates_per_epoch)",
        "steps_per_epoch=self.accumulation.batches_per_epoch)",
        [T + "recipe/test_accumulation.py::test_schedule_counts_updates"]),
    # The input position counted in updates: resume skips to the wrong batch.
    Mutation(
        "accumulation_resume_position_in_updates", "towertrain/trainer.py",
        "        return self.accumulation.batches_before(step)\n", "        return step\n",
        [T + "state/test_resume_accumulation.py::test_every_example_once_per_epoch_across_a_kill"]),
    # A stop drains only the staged batches, ending mid-update.
    Mutation(
        "accumulation_drain_mid_update", "towertrain/trainer.py",
        "        if self.accumulators is None:\n            return self._staging.drain()\n",
        "        if True:\n            return self._staging.drain()\n",
        [T + "state/test_resume_accumulation.py::test_stop_mid_epoch_then_resume_equals_uninterrupted"]),
    # Micro-batches exchange: every one goes through the update path.
    Mutation(
        "accumulation_exchanges_every_micro_batch", "towertrain/engine/step.py",
        "        if phase == accumulate.ACCUMULATE:\n            return self._accumulate(",
        "        if False:\n            return self._accumulate(",
        [T + "recipe/test_accumulation.py::test_micro_batches_before_the_last_exchange_nothing"]),
    # Accumulation with --variable_update=independent let through.
    Mutation(
        "accumulation_independent_allowed", "towertrain/config/recipe_checks.py",
        "    if steps > 1 and p.variable_update == \"independent\":",
        "    if False:",
        [T + "recipe/test_accumulation.py::test_refused_combinations_name_the_flags"]),
]
