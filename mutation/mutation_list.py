"""The breakages mutations.py applies: one documented claim each, as
(name, place, old text, new text, the tests that must fail). Add an entry
whenever a claim gets a test.

The place names the definition that holds the old text, not its file, so
moving or renaming a file keeps the entry valid (locate.py says how it is
found): At("Class.method"), At("function"), At("CONSTANT"), with module=
only where the name is defined in several modules; Module("plan.steps") for
a module's imports; File("README.md") for what is not product code. The old
text must occur once in that definition. To write a new entry's place:

    python mutation/mutations.py --where towertrain/some/file.py 'the old text'

and after code moved, python mutation/relocate.py re-places the entries it
broke whose old text is still in the product, once.

tests/package/test_mutation_list.py checks that every entry resolves and
that every test it names exists."""
import collections

from locate import At, File, Module  # noqa: F401 - mutation/ is the scripts' dir

Mutation = collections.namedtuple("Mutation", "name place old new tests")

T = "tests/"
DOORS = T + "input/test_input_doors.py::"
CHECKS = T + "engine/test_model_checks.py::"
GPU_GRAPH = T + "engine/test_collective_gpu_graph.py::"
SHARE = T + "input/test_worker_share.py::"
RECIPES = T + "recipe/test_model_recipes.py::"
SAVER = T + "callbacks/test_checkpoint_saver.py::"
PACK_TUNING = T + "engine/test_pack_tuning.py::"
MUTATIONS = [
    # 1. Staging: stage the next batch before taking the current one.
    Mutation(
        "staging_put_before_get", At("StagedInput.tower_batches"),
        "        batches = self._get_all()\n        if after_get is not None:\n"
        "            after_get(batches)\n        if put:\n            self._put_all()\n",
        "        if put:\n            self._put_all()\n        batches = self._get_all()\n"
        "        if after_get is not None:\n            after_get(batches)\n",
        [T + "engine/test_staging.py"]),
    # 3. The global batch sliced on /gpu:0 instead of the CPU.
    Mutation(
        "slice_on_gpu0", At("split_to_devices"),
        '    with tf.device("/cpu:0"):\n        if batch is not None:',
        '    with tf.device("/gpu:0"):\n        if batch is not None:',
        [T + "engine/test_placement_graph.py::test_global_batch_is_sliced_on_cpu_and_each_gpu_gets_only_its_slice"]),
    # 3b. Slices not copied to their devices (every tower reads from the CPU).
    Mutation(
        "slices_stay_on_cpu", At("split_to_devices"),
        "        with tf.device(device):\n            per_device.append(",
        '        with tf.device("/cpu:0"):\n            per_device.append(',
        [T + "engine/test_placement_graph.py::test_global_batch_is_sliced_on_cpu_and_each_gpu_gets_only_its_slice"]),
    # 4a. parameter_server, --local_parameter_device=gpu: everything on /gpu:0.
    Mutation(
        "ps_gpu_all_on_gpu0", At("ParameterServerManager.create"),
        "            self.parameter_devices = list(self.devices)",
        '            self.parameter_devices = ["/gpu:0"]',
        [T + "engine/test_placement_graph.py::test_parameter_server_gpu_spreads_variables_sums_and_updates_largest_first"]),
    # 4b. parameter_server, --local_parameter_device=cpu: everything on /gpu:3.
    Mutation(
        "ps_cpu_on_gpu3", At("ParameterServerManager.create"),
        '            self.parameter_devices = ["/cpu:0"]',
        '            self.parameter_devices = ["/gpu:3"]',
        [T + "engine/test_placement_graph.py::test_parameter_server_cpu_keeps_sums_and_updates_on_cpu0_in_a_gpu_graph",
         T + "engine/test_placement_graph.py::test_parameter_server_cpu_variables_and_slots_live_on_cpu0"]),
    # 4c. Only the variables created on /gpu:3, sums and updates still on the
    # CPU: soft placement moves them back to the CPU in a GPU trace, so only
    # the run with soft placement off can see it.
    Mutation(
        "ps_cpu_variables_created_on_gpu3", At("ParameterServerManager.create"),
        "            new_variables([t.value], [t], self.parameter_devices[d], True)[0]",
        '            new_variables([t.value], [t], "/gpu:3", True)[0]',
        [T + "engine/test_placement_graph.py::test_parameter_server_cpu_variables_and_slots_live_on_cpu0"]),
    # 4d. parameter_server, cpu: variables on the last device (/cpu:3 here).
    Mutation(
        "ps_cpu_on_last_device", At("ParameterServerManager.create"),
        '            self.parameter_devices = ["/cpu:0"]',
        "            self.parameter_devices = [self.devices[-1]]",
        [T + "engine/test_placement_graph.py::test_parameter_server_cpu_variables_and_slots_live_on_cpu0"]),
    # 5a. Ring reduce-scatter: each hop's add on the chunk's first device.
    Mutation(
        "ring_adds_on_wrong_device", At("RingAllReduce.sum_flats"),
        "                with tf.device(devices[holder]):\n                    partial[c] = partial[c] + chunks[holder][c]",
        "                with tf.device(devices[c]):\n                    partial[c] = partial[c] + chunks[holder][c]",
        [T + "engine/test_placement_graph.py::test_ring_hops_run_on_the_ring_positions"]),
    # 5b. Ring all-gather: the copies made on the owner instead of the receiver.
    Mutation(
        "ring_gather_on_wrong_device", At("RingAllReduce.sum_flats"),
        "                with tf.device(devices[holder]):\n                    gathered[holder][c] = tf.identity(",
        "                with tf.device(devices[owner]):\n                    gathered[holder][c] = tf.identity(",
        [T + "engine/test_placement_graph.py::test_ring_hops_run_on_the_ring_positions"]),
    # 5c. Ring: a hop adds the previous holder's piece instead of its own.
    Mutation(
        "ring_adds_wrong_piece", At("RingAllReduce.sum_flats"),
        "partial[c] = partial[c] + chunks[holder][c]",
        "partial[c] = partial[c] + chunks[(holder - 1) % n][c]",
        [T + "engine/test_placement_graph.py::test_ring_hops_run_on_the_ring_positions"]),
    # The CPU reduce-scatter slices each shard on the receiving device: the
    # whole pack is copied to every device instead of its shard.
    Mutation(
        "scatter_slices_on_the_receiver", At("ClusterExchange._add_n_reduce_scatter"),
        "                with tf.device(source):\n                    pieces.append(flat[start:start + size])",
        "                with tf.device(device):\n                    pieces.append(flat[start:start + size])",
        [T + "engine/test_exchange_placement.py"]),
    # The ring's chunks all cut on the first device (every pack crosses whole).
    Mutation(
        "ring_chunks_cut_on_one_device", At("RingAllReduce.sum_flats"),
        "        for device, flat in zip(devices, flats):\n            with tf.device(device):\n"
        "                chunks.append(",
        "        for device, flat in zip(devices, flats):\n            with tf.device(devices[0]):\n"
        "                chunks.append(",
        [T + "engine/test_exchange_placement.py"]),
    # 2. Batch-norm moving statistics from the last tower instead of tower 0.
    Mutation(
        "bn_stats_from_last_tower", At("stats_tower"),
        "    for i, values in enumerate(tower_non_trainable):",
        "    for i, values in reversed(list(enumerate(tower_non_trainable))):",
        [T + "engine/test_batch_norm_numbers.py"]),
    # 2b. replicated: each copy keeps its own tower's statistics (copies drift).
    Mutation(
        "replicated_bn_each_copy_its_own", At("ReplicatedManager._statistics"),
        "        return [(lambda: values) if i == source\n",
        "        return [(lambda i=i: tower_non_trainable[i] or values) if True\n",
        [T + "engine/test_batch_norm_numbers.py"]),
    # 2b'. replicated: tower 0's statistics copied tensor by tensor (a
    # transfer per statistic and device, not one flat transfer per device).
    Mutation(
        "stats_copied_per_tensor", At("copied"),
        "        moved = [tf.identity(flat) for flat in flats]\n"
        "    return lambda: packing.scatter(moved, packs, values)\n",
        "        moved = [tf.identity(v) for v in values]\n    return lambda: moved\n",
        [T + "engine/test_gpu_step_facts.py::"
         "test_the_statistics_reach_each_device_in_one_transfer"]),
    # 2c. independent: every copy takes tower 0's statistics.
    Mutation(
        "independent_bn_from_tower0", At("IndependentManager.apply"),
        "assign_all(self._non_trainable[i], tower_non_trainable[i])",
        "assign_all(self._non_trainable[i], tower_non_trainable[0])",
        [T + "engine/test_batch_norm_numbers.py"]),
    # 7a. The fused layer's unknown-batch path raises.
    Mutation(
        "fused_bn_unknown_batch_raises", At("FusedBatchNormalization.call"),
        "            shape = tf.shape(inputs)\n",
        '            raise ValueError("batch size unknown")\n',
        [T + "engine/test_batch_norm_numbers.py"]),
    # 7b. The fused layer's unknown-batch path drops its variance correction.
    Mutation(
        "fused_bn_unknown_batch_no_variance_correction", At("FusedBatchNormalization.call"),
        "            variance = unbiased_variance * (count - 1.0) / tf.maximum(count, 1.0)",
        "            variance = unbiased_variance",
        [T + "engine/test_batch_norm_numbers.py"]),
    # 7c. The same on the static-shape path.
    Mutation(
        "fused_bn_static_batch_no_variance_correction", At("FusedBatchNormalization.call"),
        "            variance = unbiased_variance * ((count - 1.0) / max(count, 1.0))",
        "            variance = unbiased_variance",
        [T + "engine/test_batch_norm_numbers.py"]),
    # 6a. CIFAR training augmentation reduced to standardization.
    Mutation(
        "cifar_train_standardize_only", At("cifar_train"),
        "    image = tf.pad(image, [[CIFAR_PAD, CIFAR_PAD], [CIFAR_PAD, CIFAR_PAD], [0, 0]])\n"
        "    image = tf.image.stateless_random_crop(image, [CIFAR_SIZE, CIFAR_SIZE, 3], crop_seed)\n"
        "    image = tf.image.stateless_random_flip_left_right(image, flip_seed)\n",
        "",
        [T + "input/test_preprocessing.py"]),
    # 6b. CIFAR training without the flip.
    Mutation(
        "cifar_train_no_flip", At("cifar_train"),
        "    image = tf.image.stateless_random_flip_left_right(image, flip_seed)\n"
        "    return tf.image.per_image_standardization(image)",
        "    return tf.image.per_image_standardization(image)",
        [T + "input/test_preprocessing.py"]),
    # 6c. CIFAR training crop without the padding (the crop is the whole image).
    Mutation(
        "cifar_train_no_pad", At("cifar_train"),
        "    image = tf.pad(image, [[CIFAR_PAD, CIFAR_PAD], [CIFAR_PAD, CIFAR_PAD], [0, 0]])\n",
        "",
        [T + "input/test_preprocessing.py"]),
    # 6d. One fixed seed for every example's crop and flip.
    Mutation(
        "cifar_augmentation_seed_fixed", At("cifar_train"),
        "    crop_seed, flip_seed = tf.unstack(_split_seed(seed, 2))",
        "    crop_seed, flip_seed = tf.unstack(_split_seed(tf.constant([7, 7]), 2))",
        [T + "input/test_preprocessing.py"]),
    # 6e. CIFAR eval augmented too (deterministically).
    Mutation(
        "cifar_eval_augmented", At("cifar_eval"),
        "def cifar_eval(image):\n    return tf.image.per_image_standardization(image)",
        "def cifar_eval(image):\n    return cifar_train(image, tf.constant([1, 2], tf.int64))",
        [T + "input/test_preprocessing.py"]),
    # 6f. ImageNet training preprocessing replaced by the eval path.
    Mutation(
        "imagenet_train_is_eval", At("imagenet_train"),
        "    box_seed, flip_seed = tf.unstack(_split_seed(seed, 2))\n",
        "    return imagenet_eval(encoded, image_size)\n",
        [T + "input/test_preprocessing.py"]),
    # 6g. ImageNet training without the flip.
    Mutation(
        "imagenet_train_no_flip", At("imagenet_train"),
        "    image = tf.image.stateless_random_flip_left_right(image, flip_seed)\n"
        "    return tf.clip_by_value(image, 0.0, 255.0) / 127.5 - 1.0",
        "    return tf.clip_by_value(image, 0.0, 255.0) / 127.5 - 1.0",
        [T + "input/test_preprocessing.py"]),
    # 6h. ImageNet eval crop fraction changed (central 100% instead of 87.5%).
    Mutation(
        "imagenet_eval_no_central_crop", At("imagenet_eval"),
        "    image = tf.image.central_crop(image, IMAGENET_EVAL_CROP)\n",
        "",
        [T + "input/test_preprocessing.py"]),
    # 8a. Optimizer slot discovery disabled: checkpoints hold no slots.
    Mutation(
        "checkpoint_optimizer_slots_empty", At("optimizer_slots"),
        "    slots = {id(v): {} for _, v in prefixes}\n",
        "    slots = {id(v): {} for _, v in prefixes}\n    return slots\n",
        [T + "state/test_checkpoint_files.py"]),
    # 8b. A restore does not copy the slots to the other replicas.
    Mutation(
        "restore_does_not_sync_slots", At("EngineState.sync_copies"),
        "                    if name in source and slot is not source[name]:\n"
        "                        slot.assign(source[name])",
        "                    if name in source and slot is not source[name]:\n"
        "                        pass",
        [T + "state/test_checkpoint_files.py"]),
    # 8c. A failed restore writes the fresh state over the damaged checkpoint.
    Mutation(
        "failed_restore_rewrites_checkpoint", At("restore"),
        "    except (tf.errors.OpError, ValueError, IndexError) as err:  # IndexError: short file\n",
        "    except (tf.errors.OpError, ValueError, IndexError) as err:  # IndexError: short file\n"
        "        checkpoint.write(path)\n",
        [T + "state/test_checkpoint_files.py::test_damaged_latest_checkpoint_fails_and_no_byte_changes"]),
    # A damaged checkpoint: TensorFlow's RestoreV2 line and leaked warnings, no
    # earlier one offered / --checkpoint ignored by training.
    Mutation(
        "damaged_checkpoint_not_named", At("restore"),
        "    check_matches(path, expected_variables)\n    check_whole(path)\n",
        "    check_matches(path, expected_variables)\n", [T + "state/test_checkpoint_files.py::test_damaged_latest_checkpoint_fails_and_no_byte_changes"]),
    Mutation(
        "training_ignores_checkpoint_flag", At("_resume_chief"),
        "    resumed.restore(chosen)\n", "    resumed.restore()\n", [T + "state/test_checkpoint_files.py::test_damaged_latest_checkpoint_fails_and_no_byte_changes"]),
    # A lost `checkpoint` state file: the run starts over and saves over the ckpt-N files.
    Mutation(
        "lost_state_file_starts_over", At("rebuild_state_file"),
        "    if not train_dir or tf.io.gfile.exists(os.path.join(train_dir, STATE_FILE)):\n",
        "    if True:\n",
        [T + "state/test_train_dir_remains.py"]),
    # The rewritten state file without times: its checkpoints never count against the limit.
    Mutation(
        "rebuilt_checkpoints_kept_forever", At("rebuild_state_file"),
        "                + \"\".join(f\"all_model_checkpoint_timestamps: {t!r}\\n\" for t in times)\n",
        "",
        [T + "state/test_train_dir_remains.py"]),
    # ckpt-N_temp/ of a save a killed run never finished, kept forever.
    Mutation(
        "unfinished_saves_kept", At("_resume_chief"),
        "    resumed.removed = leftovers.remove_unfinished_saves(out.train_dir)\n", "",
        [T + "state/test_train_dir_remains.py::"
         "test_the_folders_of_saves_a_killed_run_never_finished_are_removed_at_the_next_start"]),
    # --max_ckpts_to_keep not passed on (the manager keeps its default, 5).
    Mutation(
        "max_ckpts_to_keep_ignored", At("resume"),
        "checkpointer = Checkpointer(handles, plan, out.train_dir, out.max_ckpts_to_keep)",
        "checkpointer = Checkpointer(handles, plan, out.train_dir)",
        [T + "commands/test_cli_checkpoints.py::test_max_ckpts_to_keep_leaves_exactly_the_last_checkpoints"]),
    # --eval --checkpoint=PATH ignored: the latest checkpoint is evaluated.
    Mutation(
        "eval_checkpoint_flag_ignored", At("run_eval"),
        "    path = ckpt_lib.resolve(p.train_dir, p.checkpoint)",
        "    path = ckpt_lib.resolve(p.train_dir, None)",
        [T + "commands/test_cli_checkpoints.py::test_eval_checkpoint_flag_evaluates_that_older_checkpoint"]),
    # --save_model_secs ignored.
    Mutation(
        "save_model_secs_ignored", At("CheckpointSaver.after_step"),
        "        elif self.save_secs and self._pending_step is None and (",
        "        elif False and self.save_secs and self._pending_step is None and (",
        [T + "commands/test_cli_checkpoints.py::test_save_model_secs_saves_during_the_run"]),
    # --save_model_secs saves every step.
    Mutation(
        "save_model_secs_every_step", At("CheckpointSaver.after_step"),
        "                time.monotonic() - self._last_save_time >= self.save_secs):",
        "                time.monotonic() - self._last_save_time >= 0):",
        [T + "commands/test_cli_checkpoints.py::test_save_model_secs_saves_during_the_run"]),
    # 9. Eval scores the training split instead of test_batch.bin.
    Mutation(
        "eval_reads_train_split", At("eval_data", module="cifar10"),
        "    files = find_files(data_dir, train=False)\n    num_examples = sum(check_file(f) "
        "for f in files)\n\n    def eval_map",
        "    files = find_files(data_dir, train=True)\n    num_examples = sum(check_file(f) "
        "for f in files)\n\n    def eval_map",
        [T + "state/test_eval_checked.py"]),
    # 9b. An input without an eval split silently scores something else.
    Mutation(
        "eval_missing_split_not_an_error", At("eval_data_for"),
        '        raise InputError(f"cannot evaluate: {err}") from err',
        "        return None",
        [T + "state/test_eval_checked.py::test_missing_test_split_is_an_error_naming_the_file",
         T + "state/test_eval_checked.py::test_an_input_without_an_eval_split_is_an_error_not_a_stand_in"]),
    # Exact resume with staging: checkpoints taken with batches still staged.
    Mutation(
        "staging_ignores_save_fences", At("StagedInput._limit"),
        "        ahead = [f for f in self._fences if f > self.consumed]",
        "        ahead = []",
        [T + "state/test_resume_epochs.py::test_every_example_once_per_epoch_across_an_interruption"]),
    # Non-finite gradients applied anyway.
    Mutation(
        "nonfinite_step_applied", At("gradients_finite"),
        "    return tf.reduce_all(tf.stack([tf.reduce_all(tf.math.is_finite(g)) for g in grads",
        "    return tf.constant(True)\n"
        "    return tf.reduce_all(tf.stack([tf.reduce_all(tf.math.is_finite(g)) for g in grads",
        [T + "callbacks/test_divergence.py::test_nan_gradients_with_a_finite_loss_apply_nothing_on_any_copy"]),
    # Every tower draws tower 0's dropout masks.
    Mutation(
        "towers_share_dropout_masks", At("Towers._tower_values"),
        "                + self.tower_indices[i])",
        "                + 0)",
        [T + "engine/test_dropout_towers.py::test_towers_draw_independent_dropout_masks"]),
    # Sync batch norm: each tower differentiates only its own loss (misses
    # what its slice contributed to the other towers' statistics).
    Mutation(
        "sync_bn_gradient_of_own_loss_only", At("compute_towers_in_lockstep"),
        "    grads = tf.gradients([result.scaled for _, _, result in traced], flat,\n"
        "                         unconnected_gradients=tf.UnconnectedGradients.ZERO)",
        "    grads = [g for trainable, _, result in traced for g in tf.gradients(\n"
        "        result.scaled, trainable, unconnected_gradients=tf.UnconnectedGradients.ZERO)]",
        [T + "engine/test_sync_batch_norm.py"]),
    # Sync batch norm: the cross-tower sum hands each tower its own values back.
    Mutation(
        "sync_bn_no_cross_tower_sum", At("Lockstep.all_sum"),
        "            return list(self._result)",
        "            return list(tensors)",
        [T + "engine/test_sync_batch_norm.py"]),
    # Epoch seeds: the shuffle reshuffles from a generator carried across epochs.
    Mutation(
        "epoch_shuffle_not_seeded_by_epoch", At("epoch_batches.one_epoch"),
        "            data = seeded_shuffle(data, buffer_size, epoch_seed(seed, epoch, SHUFFLE))",
        "            data = data.shuffle(buffer_size)",
        [T + "input/test_input_readers.py"]),
    # The epoch shuffle under a graph seed of 0 (--tf_random_seed=0).
    Mutation(
        "epoch_shuffle_uses_the_graph_seed", At("seeded_shuffle"),
        "    graph_seed, graph.seed = graph.seed, None\n", "    graph_seed = graph.seed\n",
        [T + "input/test_input_readers.py::"
         "test_shuffled_order_is_set_by_the_input_seed_alone_even_under_graph_seed_0"]),
    # Queue input: a resumed run's feeders start again at the first batch.
    Mutation(
        "queue_input_resumes_from_the_first_batch", At("QueueInput.resume_after"),
        "        self._batches = self._all_batches(skip=step)",
        "        self._batches = self._all_batches(skip=0)",
        [T + "state/test_resume_epochs.py::test_every_example_once_per_epoch_across_an_interruption"]),
    # Seeing the run.
    Mutation(
        "gradient_norm_left_loss_scaled", At("extras"),
        "            summed = [g / tf.cast(grad_scale, g.dtype) for g in summed]\n", "",
        [T + "callbacks/test_summaries.py::test_gradient_norm_and_histograms_are_the_true_unscaled_gradient"]),
    Mutation(
        "standalone_eval_writes_no_summaries", At("run_eval.evaluate"),
        "        summaries.write_eval_result(outputs.logdir, step, result)\n", "        pass\n",
        [T + "callbacks/test_summaries.py::"
         "test_a_standalone_eval_writes_its_result_under_eval_at_the_checkpoint_step"]),
    Mutation(
        "input_wait_counts_only_the_staging_overrun", At("input_wait"),
        "    wait = clock[\"ready\"] - clock[\"start\"]\n",
        "    wait = 0.0\n",
        [T + "input/test_input_wait.py::test_an_input_bound_run_reports_its_true_wait_share",
         T + "input/test_input_wait.py::test_a_balanced_run_reports_about_half"]),
    Mutation(
        "scaling_skips_collective_all_reduce", At("modes"),
        '             ("collective_all_reduce", "collective_all_reduce", None),\n', "",
        [T + "commands/test_scaling.py::test_table_has_exactly_a_row_per_configuration"]),
    # Library door: labels and losses checked in the user's terms.
    Mutation(
        "door_dataset_unchecked", At("from_dataset"),
        '    result.entry_point = "from_dataset"\n', "",
        [DOORS + "test_labels_outside_the_models_classes_fail_the_step_naming_them",
         DOORS + "test_a_bad_label_in_the_first_batch_with_staging_on"]),
    Mutation(
        "door_generator_unchecked", At("from_generator"),
        '    result.entry_point = "from_generator"\n', "",
        [DOORS + "test_labels_outside_the_models_classes_fail_the_step_naming_them"]),
    Mutation(
        "label_check_upper_bound_dropped", At("label_check"),
        "    in_range = tf.logical_and(low >= 0, high < num_classes)", "    in_range = low >= 0",
        [DOORS + "test_labels_outside_the_models_classes_fail_the_step_naming_them"]),
    Mutation(
        "label_check_error_not_converted", At("input_errors"),
        "            if found is not None:\n                raise found from err\n", "",
        [DOORS + "test_labels_outside_the_models_classes_fail_the_step_naming_them",
         CHECKS + "test_a_custom_loss_of_the_wrong_length_on_dynamic_slices"]),
    Mutation(
        "generator_one_epoch_only", At("from_generator"),
        "    batches = epoch_batches(dataset, global_batch, num_epochs)\n    result = DatasetInput(",
        "    batches = epoch_batches(dataset, global_batch, 1)\n    result = DatasetInput(",
        [DOORS + "test_from_generator_trains_as_from_arrays"]),
    Mutation(
        "loss_check_skipped", At("forward"),
        "    if loss_fn is not sparse_softmax_cross_entropy:  # a user's loss: one value per example?",
        "    if False:  # a user's loss: one value per example?",
        [CHECKS + "test_a_custom_loss_that_does_not_return_one_loss_per_example",
         CHECKS + "test_a_custom_loss_of_the_wrong_length_on_dynamic_slices"]),
    Mutation(
        "loss_check_length_ignored", At("per_example_losses"),
        "        if len(got) != 1 or (None not in (got[0], size) and got[0] != size):",
        "        if len(got) != 1:",
        [CHECKS + "test_a_custom_loss_that_does_not_return_one_loss_per_example"]),
    Mutation(
        "loss_dynamic_check_rank_only", At("per_example_losses"),
        "    ok = tf.logical_and(tf.equal(tf.rank(losses), 1),\n"
        "                        tf.equal(tf.size(losses), tf.shape(batch)[0]))",
        "    ok = tf.equal(tf.rank(losses), 1)",
        [CHECKS + "test_a_custom_loss_of_the_wrong_length_on_dynamic_slices"]),
    Mutation(
        "unbuilt_model_not_checked_early", At("Trainer.__init__"),
        '            up_front.check_built(model, input_source)', "            pass",
        [CHECKS + "test_a_model_that_is_not_built"]),
    Mutation(
        "tower_loss_over_its_own_slice", At("Towers._tower"),
        "            denominator = global_count if self.variables.synchronous else tf.shape(images)[0]",
        "            denominator = tf.shape(images)[0]",
        [DOORS + "test_multi_output_custom_loss_on_two_devices_equals_serial_keras"]),
    Mutation(
        "eval_in_training_mode", At("Evaluator._eval_batch"),
        "tower_images,\n                                                   training=False)",
        "tower_images,\n                                                   training=True)",
        [DOORS + "test_evaluate_a_user_model_on_user_data"]),
    # Library door: BUILD, docs and examples kept honest.
    Mutation(
        "bazel_tests_without_their_helpers", File("BUILD"),
        '    deps = [":test_support"],', '    deps = [":towertrain"],',
        [T + "package/test_build_file.py::test_every_test_target_can_import_the_test_modules_it_uses"]),
    Mutation(
        "readme_quickstart_flag_misspelled", File("README.md"),
        "--device=cpu --num_gpus=2 --variable_update=replicated --num_batches=20",
        "--device=cpu --num_gpu=2 --variable_update=replicated --num_batches=20",
        [T + "commands/test_doc_commands.py::test_every_shell_command_is_known_and_its_flags_parse"]),
    Mutation(
        "library_block_forgets_logical_cpus", File("docs/library.md"),
        "towertrain.use_logical_cpus(2)     # on CPU", "# towertrain.use_logical_cpus(2)  # on CPU",
        [T + "commands/test_docs.py::test_every_multi_device_cpu_example_and_block_configures_its_devices"]),
    Mutation(
        "library_callback_never_runs", File("docs/library.md"),
        "for _ in range(10):                  # your own loop: steps 1..10",
        "for _ in range(100):                  # your own loop",
        [T + "commands/test_docs.py::test_code_block_runs[docs/library.md#0]"]),
    # The docs site: built strictly, links and anchors checked, every public
    # name in the API page, rendered by Chromium, the sample output current.
    Mutation(
        "docs_anchors_not_checked", File("mkdocs.yml"),
        "    anchors: warn\n", "    anchors: info\n",
        [T + "commands/test_docs_site.py::test_a_broken_link_or_anchor_fails_the_build"]),
    Mutation(
        "docs_page_left_out_of_the_nav", File("mkdocs.yml"),
        "      - Observing a run: observing.md\n", "",
        [T + "commands/test_docs_site.py::"
         "test_the_site_builds_strictly_with_every_page_in_the_nav"]),
    Mutation(
        "api_page_lacks_a_public_name", File("docs/api.md"),
        "::: towertrain.errors.DeviceError\n", "",
        [T + "commands/test_docs_site.py::"
         "test_the_api_page_documents_every_public_name_and_nothing_else"]),
    Mutation(
        "docs_site_without_the_theme", File("mkdocs.yml"),
        "  name: material\n", "  name: mkdocs\n",
        [T + "commands/test_docs_site.py::"
         "test_chromium_renders_the_page_with_its_navigation_and_assets[index.html]"]),
    Mutation(
        "readme_sample_output_stale", File("README.md"),
        "    Threads:     intra-op 1 per process (2 cores / 2 towers; --num_intra_threads "
        "sets it)\n", "",
        [T + "commands/test_doc_commands.py::"
         "test_readme_first_training_command_runs_at_tiny_size"]),
    Mutation(
        "kubernetes_pod_command_misspelled", File("docs/clusters.md"),
        "              --variable_update=collective_all_reduce, --train_dir=/shared/run1]",
        "              --variable_update=collective_allreduce, --train_dir=/shared/run1]",
        [T + "commands/test_doc_commands.py::"
         "test_every_shell_command_is_known_and_its_flags_parse"]),
    Mutation(
        "slurm_srun_command_misspelled", File("docs/clusters.md"),
        "srun python -m towertrain --model=resnet50 --num_gpus=4",
        "srun python -m towertrain --model=resnet50 --num_gpu=4",
        [T + "commands/test_doc_commands.py::"
         "test_every_shell_command_is_known_and_its_flags_parse"]),
    Mutation(
        "getting_started_eval_reads_no_data", File("docs/getting-started.md"),
        "--eval --train_dir=runs/resnet20 --data_dir=cifar-10-batches-bin",
        "--eval --train_dir=runs/resnet20",
        [T + "commands/test_doc_commands.py::"
         "test_getting_started_trains_evaluates_and_exports_on_the_download"]),
    # The project speaks of itself only: a planted phrase of how it was made
    # (split here so that this file does not say it) is found.
    Mutation(
        "readme_tells_how_it_was_made", File("README.md"),
        "The first trains ResNet-20 on synthetic CIFAR-10-shaped data",
        "The first (timed in this " "session) trains ResNet-20 on synthetic CIFAR-10-shaped data",
        [T + "package/test_own_words.py::test_no_text_file_tells_how_the_project_was_made"]),
    Mutation(
        "word_test_misses_design_notes", File("tests/package/test_own_words.py"),
        '(r"DESIGN\\.md", "design notes outside the repository")',
        '(r"DESIGN\\.mdx", "design notes outside the repository")',
        [T + "package/test_own_words.py::"
         "test_planted_phrases_are_found_and_tensorflows_terms_are_not"]),
    Mutation(
        "help_without_the_models", At("help_text", module="train"),
        'lines += textwrap.wrap(", ".join(catalog.registered_names()), width,',
        'lines += textwrap.wrap("", width,',
        [T + "commands/test_cli.py::"
         "test_help_names_every_model_and_gives_the_readmes_first_command"]),
    Mutation(
        "private_name_made_public", At("_EXPORTS"),
        '_EXPORTS = {\n', '_EXPORTS = {\n    "build_model": "towertrain.models",\n',
        [T + "package/test_public_api.py::test_public_names_resolve_and_are_documented"]),
    Mutation(
        "late_devices_error_names_a_private_helper", At("ensure_logical_cpus"),
        "(towertrain.use_logical_cpus({count}) first thing)",
        "(towertrain.engine.process.devices.ensure_logical_cpus({count}) first thing)",
        [T + "package/test_public_api.py::test_devices_configured_too_late_fail_naming_the_fix"]),
    Mutation(
        "example_callback_never_stops", File("examples/custom_callback.py"),
        '            self.loop.request_stop(f"loss {result.loss:.3f} < {self.target}")',
        "            pass",
        [T + "package/test_examples.py::test_example_runs_at_tiny_size[custom_callback.py]"]),
    # The engine installs the synchronized moments into the zoo's batch norm.
    Mutation(
        "fused_sync_hook_not_installed", At("attach"),
        "        layer.cross_tower_moments = _lockstep_moments\n", "        pass\n",
        [T + "engine/test_sync_batch_norm.py"]),
    # Private Keras/TF names live behind private_api. Keras' own batch
    # norm no longer rerouted (its moments stay per tower).
    Mutation(
        "keras_batch_norm_moments_not_rerouted", At("reroute_batch_norm_moments"),
        "    layer._moments = functools.partial(fn, layer, original)\n", "",
        [T + "package/test_private_api.py::test_rerouted_moments_are_what_the_layer_normalizes_with"]),
    # A private name that went missing is not reported.
    Mutation(
        "private_name_missing_not_reported", At("check_available"),
        "        if not ok:\n            missing.append(name)\n", "",
        [T + "package/test_private_api.py::test_a_missing_name_is_reported"]),
    # Each trace's unused CustomGradient kept every Trainer's graph alive.
    Mutation(
        "traced_update_leaks_its_graph", At("TrainStep._apply"),
        "        with private_api.forget_custom_gradients():  # else each trace leaks its graph",
        "        with contextlib.nullcontext():  # else each trace leaks its graph",
        [T + "package/test_private_api.py::test_trainers_leave_no_custom_gradient_behind"]),
    # The house. A package left out of setup.py (the wheel lacks it).
    Mutation(
        "wheel_without_callbacks", File("setup.py"),
        '[f"towertrain.{name}" for name in find_packages("towertrain")]',
        '[f"towertrain.{name}" for name in find_packages("towertrain") if name != "callbacks"]',
        [T + "package/test_wheel.py"]),
    # The engine reaching up into a command.
    Mutation(
        "engine_imports_a_command", Module("evaluator"),
        "import collections\n", "import collections\nfrom towertrain.commands import common  # noqa\n",
        [T + "package/test_import_structure.py::test_nothing_outside_commands_imports_a_command",
         T + "package/test_import_structure.py::test_arrows_only_point_down"]),
    # Settings defined once (towertrain/config/settings.py): a generated flag
    # drifts from its Params field.
    Mutation(
        "flag_loses_its_default", At("define_flags", module="flags"),
        "            _DEFINE[setting.type](setting.name, setting.default, setting.help)",
        "            _DEFINE[setting.type](setting.name, None, setting.help)",
        [T + "config/test_settings.py::"
         "test_every_params_field_is_a_flag_with_its_default_and_type"]),
    # --eval lets a training-only flag through when it is given at its default.
    Mutation(
        "eval_takes_default_valued_training_flags", At("check_command_line", module="flags"),
        "        for flag in TRAINING_ONLY:\n            if flag in explicit:\n",
        "        for flag in TRAINING_ONLY:\n            if flag in explicit and getattr(p, flag)"
        " != params_lib.Params.__dataclass_fields__[flag].default:\n",
        [T + "config/test_settings.py::test_eval_refuses_training_only_flags_through_the_cli",
         T + "config/test_settings.py::"
         "test_check_command_line_refuses_every_training_only_flag_with_eval"]),
    # The scaling command's --help offers flags it refuses (not used / set per
    # configuration) instead of its settings' shared ones.
    Mutation(
        "scaling_help_offers_refused_flags", At("help_text", module="scaling"),
        "    fields = [s.name for s in settings.params_settings() if s.name in shared]\n",
        "    fields = [s.name for s in settings.params_settings()]\n",
        [T + "config/test_settings.py::test_scaling_help_offers_exactly_the_shared_flags",
         T + "config/test_settings.py::"
         "test_one_changed_definition_changes_flag_field_group_and_lists_together"]),
    # --- Values wired through, lists derived, features together ---
    # A mode-dependent flag loses its applies_with (adam_epsilon silently
    # accepted with --optimizer=sgd).
    Mutation(
        "mode_flag_adam_epsilon_dropped", At("Optimizer.adam_epsilon"),
        ' applies_with=("optimizer", ("adam",)),',
        '',
        [T + "config/test_ignored_flags.py::test_the_mode_rules_are_the_table_s"]),
    # The generic mode check runs for the command line only: Params (library
    # users) takes a value its mode ignores.
    Mutation(
        "mode_check_cli_only", At("check", module="mode_checks"),
        "        if actual in allowed:\n",
        "        if actual in allowed or explicit is None:\n",
        [T + "config/test_ignored_flags.py::"
         "test_a_flag_its_mode_ignores_is_an_error_naming_flag_and_mode"]),
    # --eval takes --global_norm_clip (dropped from the training-only flags).
    Mutation(
        "eval_takes_global_norm_clip", At("Clipping.global_norm_clip"),
        '"copy).",\n'
        '        training_only=True, recorded=COMPARED)',
        '"copy).", recorded=COMPARED)',
        [T + "config/test_ignored_flags.py::test_eval_refuses_every_flag_of_the_training_groups"]),
    # Step time measured from the end of the previous step: the callbacks in
    # between (evals, saves) count as step time.
    Mutation(
        "step_time_from_previous_step_end", At("Loop.run"),
        "                started = time.perf_counter()\n                result = handles.step(outputs)\n"
        "                seconds = time.perf_counter() - started\n",
        "                started = getattr(self, '_ended', None) or time.perf_counter()\n"
        "                result = handles.step(outputs)\n"
        "                seconds = time.perf_counter() - started\n"
        "                self._ended = time.perf_counter()\n",
        [T + "callbacks/test_step_time.py"]),
    # Eval's top-5 counted as top-1.
    Mutation(
        "eval_top5_is_top1", At("Evaluator._eval_batch"),
        "tf.math.in_top_k(labels, logits, k5)", "tf.math.in_top_k(labels, logits, 1)",
        [T + "state/test_eval_top5.py"]),
    # --use_fp16 --compact_gradient_transfer: the central sum done in float32
    # and rounded to float16 after (the data still crosses in float16).
    Mutation(
        "compact_sum_in_float32", At("_CentralAllReduce.partial_sum"),
        "            return device, tf.add_n(flats), []\n",
        "            return device, tf.cast(tf.add_n([tf.cast(f, tf.float32) for f in flats]),\n"
        "                                   flats[0].dtype), []\n",
        [T + "recipe/test_compact_fp16.py::test_the_traced_gpu_all_reduce_adds_in_float16",
         T + "recipe/test_compact_fp16.py::test_the_sum_rounds_to_float16_after_each_add"]),
    # fp16 x compact transfer x clipping: the clip sees the loss-scaled sum.
    Mutation(
        "compact_fp16_clips_before_unscaling", At("ReplicatedManager._update"),
        "            grads = [g / tf.cast(grad_scale, g.dtype) for g in grads]\n",
        "            grads = [g / tf.cast(grad_scale, g.dtype) for g in self.clip(grads)]\n",
        [T + "recipe/test_compact_fp16.py::test_fp16_compact_transfer_clips_the_unscaled_global_norm"]),
    # parameter_server, --local_parameter_device=gpu: every variable created on
    # the first GPU while sums and updates stay spread (the placement list is right).
    Mutation(
        "ps_gpu_variables_created_on_gpu0", At("ParameterServerManager.create"),
        "            new_variables([t.value], [t], self.parameter_devices[d], True)[0]",
        "            new_variables([t.value], [t], self.parameter_devices[0], True)[0]",
        [T + "engine/test_ps_variable_devices.py"]),
    # Multi-worker batch norm: each worker keeps its own tower 0's moving
    # statistics (copied locally) instead of the chief's riding the first pack.
    Mutation(
        "multiworker_stats_from_own_tower0", At("CollectiveManager._statistics"),
        '            summed = [functools.partial(packing.scatter, [flat], packs, chosen)\n'
        '                      for flat in exchanged.extra_values["stats"]]\n',
        '            summed = [(lambda: chosen) for _ in self.devices]\n',
        [T + "engine/test_multiworker.py::test_two_workers_equal_one_process_with_four_devices"]),
    # --minimum_learning_rate multiplied by the linear-scaling factor.
    Mutation(
        "minimum_learning_rate_scaled", At("Schedule.__init__"),
        "        self.minimum = float(minimum or 0.0)\n",
        "        self.minimum = float(minimum or 0.0) * self.scale\n",
        [T + "commands/test_flag_values.py::test_minimum_learning_rate_is_not_scaled_with_linear_scaling"]),
    # A model's own learning-rate recipe (plan/learning_rate/, models/recipes.py)
    # against tf_cnn_benchmarks' formulas.
    Mutation(
        "recipe_boundary_step_takes_the_later_rate", At("learning_rate", module="model_recipe"),
        "    boundaries = tuple(steps(e) + 1 for e in r.boundary_epochs)\n",
        "    boundaries = tuple(steps(e) for e in r.boundary_epochs)\n",
        [RECIPES + "test_the_recipe_steps_as_tf_cnn_benchmarks"]),
    Mutation(
        "recipe_not_multiplied_where_tfcnn_sums", At("learning_rate", module="model_recipe"),
        "    if summed > 1:\n        scale *= summed\n",
        "    if summed > 1:\n        scale *= 1\n",
        [RECIPES + "test_the_recipe_steps_as_tf_cnn_benchmarks",
         RECIPES + "test_collective_all_reduce_sums_every_worker_s_devices_as_there"]),
    Mutation(
        "recipe_warmup_starts_above_zero", At("Schedule.__call__"),
        "                ramp = self.initial_value * step / float(self.warmup_steps)\n",
        "                ramp = self.initial_value * (step + 1.0) / float(self.warmup_steps)\n",
        [RECIPES + "test_the_recipe_steps_as_tf_cnn_benchmarks"]),
    Mutation(
        "recipe_cifar_resnet_epoch_as_a_fraction", At("RESNET_CIFAR"),
        "    epoch_steps=\"whole\", origin=\"tf_cnn_benchmarks' ResnetCifar10Model\")",
        "    epoch_steps=\"fraction\", origin=\"tf_cnn_benchmarks' ResnetCifar10Model\")",
        [RECIPES + "test_the_recipe_steps_as_tf_cnn_benchmarks"]),
    Mutation(
        "recipe_resnet_not_divided_in_replicated", At("RESNET_IMAGENET"),
        "    divide_in_replicated=True, epoch_steps=\"fraction\",",
        "    divide_in_replicated=False, epoch_steps=\"fraction\",",
        [RECIPES + "test_the_recipe_steps_as_tf_cnn_benchmarks"]),
    Mutation(
        "recipe_ignores_init_learning_rate", At("source_of"),
        "    if params.piecewise_learning_rate_schedule is not None or (\n"
        "            params.init_learning_rate is not None):",
        "    if params.piecewise_learning_rate_schedule is not None:",
        [RECIPES + "test_a_flag_the_recipe_would_ignore_is_refused"]),
    Mutation(
        "recipe_takes_flags_it_ignores", At("check_flags"),
        "        value = getattr(params, flag)\n        if value:\n",
        "        value = getattr(params, flag)\n        if False:\n",
        [RECIPES + "test_a_flag_the_recipe_would_ignore_is_refused"]),
    Mutation(
        "piecewise_takes_minimum_learning_rate", At("LearningRateSettings.refuse"),
        "                     \"learning_rate_decay_factor\", \"learning_rate_schedule\",\n"
        "                     \"minimum_learning_rate\"):",
        "                     \"learning_rate_decay_factor\", \"learning_rate_schedule\"):",
        [T + "config/test_refusal_table.py::test_each_refusal_is_one_line_naming_its_flag_with_exit_2"]),
    Mutation(
        "old_run_resumes_with_the_recipe", At("recorded_before_recipes"),
        "    return entry is None or (isinstance(entry, dict) and entry.get(\"source\") == \"kept\")",
        "    return False",
        [T + "recipe/test_model_recipe_doors.py::"
         "test_a_run_recorded_before_recipes_resumes_with_its_constant_rate"]),
    Mutation(
        "run_record_without_the_learning_rate", At("_resume_chief"),
        "        learning_rate=lr_source.record_entry(handles.learning_rate),",
        "        learning_rate=None,",
        [T + "recipe/test_model_recipe_doors.py::"
         "test_a_run_recorded_before_recipes_resumes_with_its_constant_rate"]),
    Mutation(
        "recipe_batch_is_a_micro_batch", At("_learning_rate"),
        "            layout.learning_rate_recipe, layout.model, batches.per_update, examples, origin,",
        "            layout.learning_rate_recipe, layout.model, batches.global_batch, examples, origin,",
        [RECIPES + "test_an_update_s_examples_are_the_batch_in_accumulation_and_independent_modes"]),
    Mutation(
        "flags_schedule_without_synthetic_known_size", At("_learning_rate"),
        "    if steps_per_epoch is None and examples is not None and input_facts.synthetic:",
        "    if False:",
        [T + "recipe/test_lr_schedule.py::"
         "test_trainer_builds_the_schedule_from_global_batch_and_examples_per_epoch"]),
    # The fused update (recipe/fused_update.py): Keras' bits, Keras' state, one kernel.
    Mutation(
        "fused_nesterov_flag_dropped", At("_sgd_update"),
        "        use_nesterov=bool(optimizer.nesterov))",
        "        use_nesterov=False)",
        [T + "recipe/test_fused_update.py::test_fused_equals_keras_apply_bit_for_bit"]),
    Mutation(
        "fused_iterations_not_incremented", At("apply"),
        "        _tf_variable(optimizer.iterations).assign_add(1)\n",
        "        pass\n",
        [T + "recipe/test_fused_update.py::test_fused_equals_keras_apply_bit_for_bit",
         T + "recipe/test_fused_update.py::test_keras_checkpoint_resumes_fused_identically"]),
    Mutation(
        "fused_learning_rate_after_increment", At("apply"),
        "        learning_rate = optimizer.learning_rate\n",
        "        learning_rate = optimizer._learning_rate(optimizer.iterations + 1) if callable(\n"
        "            optimizer._learning_rate) else optimizer.learning_rate\n",
        [T + "recipe/test_fused_update.py::test_fused_equals_keras_apply_bit_for_bit"]),
    Mutation(
        "fused_adam_not_refused", At("fallback_reason"),
        "    if type(optimizer) is not keras.optimizers.SGD:\n",
        "    if type(optimizer) not in (keras.optimizers.SGD, keras.optimizers.Adam):\n",
        [T + "recipe/test_fused_update.py::test_without_an_exact_kernel_keras_applies_the_update"]),
    Mutation(
        "fused_weight_decay_ignored", At("_APPLY_OPTIONS"),
        '_APPLY_OPTIONS = ("clipnorm", "clipvalue", "global_clipnorm", "weight_decay",',
        '_APPLY_OPTIONS = ("clipnorm", "clipvalue", "global_clipnorm",',
        [T + "recipe/test_fused_update.py::test_without_an_exact_kernel_keras_applies_the_update"]),
    Mutation(
        "fused_update_always_keras", At("apply"),
        "    if fallback_reason(optimizer, grads, variables) is not None:\n",
        "    if True:\n",
        [T + "recipe/test_fused_update.py::test_fused_momentum_is_one_kernel_per_variable_and_no_assign_on_them"]),
    Mutation(
        "replicated_update_not_fused", At("ReplicatedManager._update"),
        "        fused_update.apply(self._optimizers[copy], self.clip(grads), self._trainable[copy])",
        "        self._optimizers[copy].apply(self.clip(grads), self._trainable[copy])",
        [T + "recipe/test_fused_update.py::test_each_manager_writes_each_variable_copy_with_one_fused_kernel"]),
    Mutation(
        "parameter_server_update_not_fused", At("ParameterServerManager.apply"),
        "                fused_update.apply(optimizer, [summed[i] for i in indices],",
        "                optimizer.apply([summed[i] for i in indices],",
        [T + "recipe/test_fused_update.py::test_each_manager_writes_each_variable_copy_with_one_fused_kernel"]),
    Mutation(
        "independent_update_not_fused", At("IndependentManager.apply"),
        "                fused_update.apply(self._optimizers[i], clipped, self._trainable[i])",
        "                self._optimizers[i].apply(clipped, self._trainable[i])",
        [T + "recipe/test_fused_update.py::test_each_manager_writes_each_variable_copy_with_one_fused_kernel"]),
    # Flag values that must reach their code (docs/flag_tests.md).
    Mutation(
        "display_every_ignored", At("Display.is_display_step"),
        "step % self.display_every == 0", "step % 10 == 0",
        [T + "commands/test_flag_values.py::test_batch_steps_warmup_and_display_every_shape_the_run"]),
    Mutation(
        "num_warmup_batches_ignored", At("warmup_and_timed"),
        '        return params.num_warmup_batches, timed',
        '        return 10, timed',
        [T + "commands/test_flag_values.py::test_batch_steps_warmup_and_display_every_shape_the_run"]),
    Mutation(
        "tf_random_seed_ignored", At("Trainer.__init__"),
        '        keras.utils.set_random_seed(layout.input.seed)',
        '        keras.utils.set_random_seed(1234)',
        [T + "commands/test_flag_values.py::test_tf_random_seed_sets_the_initial_weights"]),
    Mutation(
        "data_name_ignored", At("lay_out"),
        '    dataset = params.data_name or model_spec.default_dataset\n',
        '    dataset = model_spec.default_dataset\n',
        [T + "commands/test_flag_values.py::test_model_data_name_and_data_format_choose_the_network_and_its_shape"]),
    # Staging x input doors: --staging_depth's value ignored (always 1).
    Mutation(
        "staging_depth_ignored", At("Trainer._make_feed"),
        'self.input, self.plan.input.staging_depth, group=',
        'self.input, 1, group=',
        [T + "input/test_staging_doors.py::test_staging_trains_each_door_on_the_batches_it_gives_unstaged"]),
    # The queue door left unstaged (the flag is silently without effect there).
    Mutation(
        "queue_input_not_staged", At("QueueInput.name"),
        '    name = "queue"\n', '    name = "queue"\n    stage = False\n',
        [T + "input/test_staging_doors.py::test_staging_trains_each_door_on_the_batches_it_gives_unstaged[queue]"]),
    # A flag without a row in docs/flag_tests.md (its value-reaches-code test unnamed).
    Mutation(
        "flag_tests_row_missing", File("docs/flag_tests.md"),
        "| `--verbose` | `tests/commands/test_cli.py::test_eval_takes_the_model_and_dataset_from_the_train_dir` | TensorFlow's log lines reach stderr |\n", "",
        [T + "commands/test_flag_tests_table.py::test_every_flag_has_a_row"]),
    # The scaling command takes --save_model_secs (dropped from its not-used flags).
    Mutation(
        "scaling_takes_save_model_secs", At("Checkpoints.save_model_secs"),
        'training_only=True, scaling=NOT_USED,',
        'training_only=True,',
        [T + "config/test_ignored_flags.py::test_scaling_refuses_every_summary_trace_and_checkpoint_flag"]),
    # Clusters (tests/cluster/): Slurm through SlurmClusterResolver, on the
    # ports --slurm_port_base gives.
    Mutation(
        "slurm_ignores_port_base", At("tasks"),
        "            port_base=port_base, **options)",
        "            port_base=8888, **options)",
        [T + "cluster/test_cluster_sources.py::"
         "test_slurm_environment_gives_the_cluster_through_the_resolver"]),
    # TF_CONFIG with a 'chief' job: the chief must be task 0.
    Mutation(
        "tf_config_chief_not_first", At("from_tf_config"),
        '    hosts = parse_worker_hosts(",".join(chiefs + workers))',
        '    hosts = parse_worker_hosts(",".join(workers + chiefs))',
        [T + "cluster/test_cluster_sources.py::"
         "test_tf_config_with_a_chief_job_and_source_conflicts"]),
    # TF_CONFIG's chief refused at every index, 0 included (an operand dropped).
    Mutation(
        "tf_config_chief_index_operand_dropped", At("from_tf_config"),
        "    if task_type == CHIEF and task_id:\n", "    if task_type == CHIEF:\n",
        [T + "state/test_refusal_operands.py"]),
    # Coordinated stop: the stop request no longer travels in the step's
    # count collective, so the other worker never hears of it.
    Mutation(
        "stop_request_not_exchanged", At("TrainStep._cluster_count_and_stop"),
        "tf.stack([count, self.stop_request.read_value()])",
        "tf.stack([count, 0 * self.stop_request.read_value()])",
        [T + "cluster/test_coordinated_stop.py"]),
    # A resume does not read the topology the checkpoint recorded.
    Mutation(
        "topology_not_read_at_resume", At("RecordedTopology.after_restore"),
        "        self.saved = tuple(int(v.numpy()) for v in self._variables)",
        "        self.saved = self.current",
        [T + "cluster/test_topology_change.py::test_a_changed_global_batch_is_said_at_the_resume"]),
    # The launcher does not notice a failed worker (waits on the others).
    Mutation(
        "launcher_ignores_a_failed_worker", At("Workers.supervise"),
        "                elif code != 0 and first is None:",
        "                elif code != 0 and first is None and False:",
        [T + "cluster/test_launch.py::"
         "test_a_worker_exiting_1_stops_the_launcher_with_1_and_no_process_left"]),
    # The launcher's output loses the task prefix.
    Mutation(
        "launcher_lines_without_task", At("Workers._copy"),
        '            self.write(f"[task {task}] {line.rstrip()}")',
        '            self.write(line.rstrip())',
        [T + "cluster/test_launch.py::"
         "test_a_worker_exiting_1_stops_the_launcher_with_1_and_no_process_left"]),
    # Several workers on one GPU machine: every worker gets the first share
    # (all map the same GPUs).
    Mutation(
        "launched_workers_share_gpus", At("share"),
        "    first = local_rank * num_gpus\n",
        "    first = 0\n",
        [T + "cluster/test_gpu_share.py::"
         "test_two_launched_workers_with_2_gpus_each_of_4_get_disjoint_gpus",
         T + "cluster/test_gpu_share.py::"
         "test_slurm_tasks_of_one_node_get_their_share_of_its_gpus_list"]),
    # ... or workers that need more GPUs than there are overlap silently.
    Mutation(
        "shared_gpu_not_refused", At("share"),
        "    if need > len(gpus):\n",
        "    if False:\n",
        [T + "cluster/test_gpu_share.py::"
         "test_workers_that_would_share_a_gpu_are_refused_before_any_starts"]),
    # Slurm numbers a node's GPUs from 0, not from the list it gave the job.
    Mutation(
        "slurm_gpus_from_zero", At("claim"),
        "        node_gpus = gpu_share.machine_gpus(environ)\n",
        "        node_gpus = tuple(str(i) for i in range(len(gpu_share.machine_gpus(environ))))\n",
        [T + "cluster/test_gpu_share.py::"
         "test_slurm_tasks_of_one_node_get_their_share_of_its_gpus_list"]),
    # A worker beside others that maps every GPU runs anyway.
    Mutation(
        "worker_sharing_gpus_not_refused", At("check_own_gpus"),
        "    if others and gpu_share.VISIBLE not in environ:",
        "    if False:",
        [T + "cluster/test_gpu_share.py::"
         "test_a_worker_beside_others_that_sees_every_gpu_is_refused"]),
    # tf_cnn_benchmarks' eval, loss and input flags (README: Flags, Input, Checkpoints).
    Mutation(
        "eval_every_n_epochs_ignored", At("for_params"),
        "        epochs = [value * k for k in range(1, math.ceil(run_epochs / value) + 1)\n"
        "                  if value * k < run_epochs]",
        "        epochs = []",
        [T + "callbacks/test_eval_flags.py::"
         "test_eval_during_training_runs_after_the_scheduled_steps_and_at_the_end"]),
    Mutation(
        "eval_at_specified_steps_ignored", At("for_params"),
        '        return EvalSchedule(total_steps, steps=evaluation_settings.parse_steps(value))',
        "        return EvalSchedule(total_steps)",
        [T + "callbacks/test_eval_flags.py::"
         "test_eval_during_training_runs_after_the_scheduled_steps_and_at_the_end"]),
    Mutation(
        "eval_at_specified_epochs_rounded_down", At("epoch_end_step"),
        "    return max(1, math.ceil(round(epoch * steps_per_epoch, 9)))",
        "    return max(1, int(epoch * steps_per_epoch) - 1)",
        [T + "callbacks/test_eval_flags.py::"
         "test_eval_during_training_runs_after_the_scheduled_steps_and_at_the_end"]),
    Mutation(
        "no_final_eval_at_the_run_end", At("EvalSchedule.due"),
        "        if step == self.total_steps:\n            return True\n", "",
        [T + "callbacks/test_eval_flags.py::"
         "test_eval_during_training_runs_after_the_scheduled_steps_and_at_the_end"]),
    Mutation(
        "stop_at_top_1_accuracy_ignored", At("PeriodicEval._evaluate"),
        "        if self.stop_at_top_1 is not None and result.top1 >= self.stop_at_top_1:",
        "        if False:",
        [T + "callbacks/test_eval_flags.py::"
         "test_stop_at_top_1_accuracy_stops_at_that_eval_and_its_checkpoint_is_final"]),
    # Several workers: each scores its share of the eval split and the counts are
    # summed, so one decision stops every worker at that eval's step.
    Mutation(
        "cluster_eval_each_worker_scores_the_whole_split",
        At("share_of"),
        "    return EvalData(eval_data.dataset.shard(num_workers, task_index), None,",
        "    return EvalData(eval_data.dataset, None,",
        [T + "cluster/test_cluster_eval.py"]),
    Mutation(
        "cluster_eval_counts_not_summed", At("ClusterEvaluator.evaluate"),
        "        total = self._sum(tf.constant(", "        total = tf.identity(tf.constant(",
        [T + "cluster/test_cluster_eval.py::"
         "test_stop_at_top_1_on_two_workers_is_one_decision_over_the_split_counted_once"]),
    Mutation(
        "cluster_eval_each_worker_decides_alone", At("evaluator_for"),
        "    if topology.num_workers == 1:\n        return evaluator\n",
        "    return evaluator\n",
        [T + "cluster/test_cluster_eval.py::"
         "test_stop_at_top_1_on_two_workers_is_one_decision_over_the_split_counted_once"]),
    Mutation(
        "final_checkpoint_not_recorded", At("CheckpointSaver.after_train"),
        "        if self.loop.completed:", "        if False:",
        [T + "callbacks/test_eval_flags.py::"
         "test_stop_at_top_1_accuracy_stops_at_that_eval_and_its_checkpoint_is_final",
         T + "commands/test_eval_follower.py::test_a_resumed_run_is_not_final_until_it_ends"]),
    Mutation(
        "num_eval_batches_ignored", At("num_batches", module="eval_amount"),
        "    if num_eval_batches is not None:\n        return num_eval_batches\n",
        "",
        [T + "callbacks/test_eval_flags.py::"
         "test_num_eval_batches_and_epochs_set_how_many_full_batches_are_scored"]),
    Mutation(
        "num_eval_epochs_rounded_down", At("num_batches", module="eval_amount"),
        "    return int(num_eval_epochs * num_examples + batch_size - 1) // batch_size",
        "    return int(num_eval_epochs * num_examples) // batch_size",
        [T + "callbacks/test_eval_flags.py::"
         "test_num_eval_batches_and_epochs_set_how_many_full_batches_are_scored"]),
    Mutation(
        "follower_evaluates_old_checkpoints_again", At("CheckpointFollower.pending"),
        "                if self.last_step is None or step > self.last_step]",
        "                if True]",
        [T + "commands/test_eval_follower.py::"
         "test_follower_waits_for_the_final_mark_and_skips_deleted_checkpoints"]),
    Mutation(
        "follower_stops_without_the_final_mark", At("CheckpointFollower.done"),
        "        return self.final_step is not None and self.last_step is not None and (\n"
        "            self.last_step >= self.final_step)",
        "        return self.last_step is not None",
        [T + "commands/test_eval_follower.py::"
         "test_follower_waits_for_the_final_mark_and_skips_deleted_checkpoints"]),
    Mutation(
        "eval_dir_ignored", At("run_eval.evaluate"),
        "            _write_events(p.eval_dir, step, result)\n", "            pass\n",
        [T + "commands/test_eval_follower.py::"
         "test_evaluator_beside_a_training_run_scores_each_checkpoint_once_until_the_final"]),
    Mutation(
        "base_loss_reports_the_total", At("forward"),
        "    return TowerForward(base if options.report_base else loss,",
        "    return TowerForward(loss,",
        [T + "engine/test_loss_report.py::"
         "test_base_loss_leaves_the_weight_decay_out_and_total_loss_has_it"]),
    Mutation(
        "single_l2_loss_op_ignored", At("l2_loss"),
        "    if single_op:", "    if False:",
        [T + "engine/test_loss_report.py::"
         "test_single_l2_loss_op_is_one_l2_loss_per_tower_with_the_same_value"]),
    Mutation(
        "display_perf_ewma_ignored", At("StepTimes.step_line"),
        "        if self.ewma:\n", "        if False:\n",
        [T + "engine/test_loss_report.py::"
         "test_display_perf_ewma_weights_recent_step_times_as_tf_cnn_benchmarks"]),
    Mutation(
        "cifar_distortions_always_on", At("cifar_train"),
        "    if not distortions:\n        return cifar_eval(image)\n", "",
        [T + "input/test_distortions_resize.py::"
         "test_cifar_distortions_off_by_default_and_on_crop_and_flip"]),
    Mutation(
        "imagenet_colour_distortions_ignored", At("imagenet_train"),
        "    if distortions:  # before the flip", "    if False:  # before the flip",
        [T + "input/test_distortions_resize.py::"
         "test_imagenet_distortions_change_the_colours_only_when_on"]),
    Mutation(
        "resize_method_ignored", At("_resize"),
        "        return tf.cast(tf.image.resize(image, [size, size], method=method), tf.float32)",
        "        return tf.cast(tf.image.resize(image, [size, size]), tf.float32)",
        [T + "input/test_distortions_resize.py::"
         "test_resize_method_crop_nearest_and_round_robin_in_eval"]),
    Mutation(
        "round_robin_one_method", At("_resize"),
        "    position = tf.cast(tf.cast(seed, tf.int64)[1] % len(RESIZE_METHODS), tf.int32)",
        "    position = tf.constant(1)",
        [T + "input/test_distortions_resize.py::"
         "test_resize_method_crop_nearest_and_round_robin_in_eval"]),
    Mutation(
        "resize_method_crop_resizes", At("imagenet_train"),
        "    if resize_method == \"crop\":\n        image = tf.io.decode_jpeg(encoded, channels=3)\n",
        "    if False:\n        image = tf.io.decode_jpeg(encoded, channels=3)\n",
        [T + "input/test_distortions_resize.py::"
         "test_resize_method_crop_trains_on_random_windows_without_resizing"]),
    # The gradient exchange. Packs cut in variable order, not reverse
    # layer order: the first pack waits for the first layer's backward.
    Mutation(
        "packs_in_forward_order", At("plan", module="packing"),
        "        order = [i for i in reversed(indices) if sizes[i]]\n",
        "        order = [i for i in indices if sizes[i]]\n",
        [T + "engine/test_repacking.py::"
         "test_plan_cuts_reverse_order_into_equal_packs_and_round_trips",
         T + "engine/test_exchange_graph.py::"
         "test_first_pack_of_the_step_waits_only_for_the_last_layers"]),
    # A pack's reduction reads a gradient outside the pack (no overlap possible).
    Mutation(
        "pack_reads_other_gradients", At("LocalExchange.exchange.sum_pack"),
        "            return algorithm.sum_flats(flats, devices)\n",
        "            tf = __import__('tensorflow')\n"
        "            return algorithm.sum_flats(\n"
        "                [f + tf.cast(0 * tf.reduce_sum(g[0]), f.dtype)\n"
        "                 for f, g in zip(flats, per_device)], devices)\n",
        [T + "engine/test_exchange_graph.py::"
         "test_each_pack_reduction_reads_only_its_own_gradients"]),
    # The run record's values and the plan's steps (generated survivors,
    # killed): a shape cut, the changeable values or the learning-rate entry
    # dropped, ImageNet's files listed by the CIFAR reader, a long file list's
    # last name or its threshold, equal values read back compared by identity,
    # a user model's dataset left out of the resume check; an epoch run's
    # warm-up taking every step, "1 devices", the advice at one per device.
    Mutation(
        "record_input_shape_cut", At("record_of"),
        "keras_model.input_shape[1:]]",
        "keras_model.input_shape[2:]]",
        [T + "state/test_run_record_values.py"]),
    Mutation(
        "record_changeable_dropped", At("record_of"),
        "**(changeable or {}),",
        "**(changeable and {}),",
        [T + "state/test_run_record_values.py"]),
    Mutation(
        "record_learning_rate_dropped", At("record_of"),
        "if learning_rate is not None else {}),",
        "if learning_rate is None else {}),",
        [T + "state/test_run_record_values.py"]),
    Mutation(
        "input_record_other_reader", At("training_input"),
        "reader = cifar10 if data_name == \"cifar10\" else imagenet",
        "reader = cifar10 if data_name >= \"cifar10\" else imagenet",
        [T + "state/test_run_record_values.py"]),
    Mutation(
        "input_record_reader_by_identity", At("training_input"),
        "reader = cifar10 if data_name == \"cifar10\" else imagenet",
        "reader = cifar10 if data_name is \"cifar10\" else imagenet",
        [T + "state/test_run_record_values.py"]),
    Mutation(
        "files_text_last_name", At("_files_text"),
        "{names[0]} .. {names[-1]}\"",
        "{names[0]} .. {names[1]}\"",
        [T + "state/test_run_record_values.py"]),
    Mutation(
        "files_text_threshold", At("_files_text"),
        "    if len(names) <= 5:\n",
        "    if len(names) <= 6:\n",
        [T + "state/test_run_record_values.py"]),
    Mutation(
        "resume_changes_by_identity", At("changes_at_resume"),
        "and record[name] != current[name]:",
        "and record[name] is not current[name]:",
        [T + "state/test_run_record_values.py"]),
    Mutation(
        "recorded_values_by_identity", At("recorded_values", module="run_record"),
        "and given.get(name) != record[name]}",
        "and given.get(name) is not record[name]}",
        [T + "state/test_run_record_values.py"]),
    Mutation(
        "user_model_check_drops_data_name", At("check", module="run_record"),
        "if name != \"model\"}",
        "if name > \"model\"}",
        [T + "state/test_run_record_values.py"]),
    Mutation(
        "epoch_warmup_takes_every_step", At("warmup_and_timed"),
        "    warmup = min(params.num_warmup_batches, total - 1)\n",
        "    warmup = min(params.num_warmup_batches, total - 0)\n",
        [T + "plan/test_multiworker_numbers.py"]),
    Mutation(
        "refusal_one_device_plural", At("check_batch_fits_epoch"),
        "device{'s' * (towers > 1)}",
        "device{'s' * (towers > 0)}",
        [T + "plan/test_multiworker_numbers.py"]),
    Mutation(
        "refusal_advice_at_one_per_device", At("check_batch_fits_epoch"),
        "\"devices\" if examples >= devices else",
        "\"devices\" if examples > devices else",
        [T + "plan/test_multiworker_numbers.py"]),
    # Checkpointing's header after a killed or copied run (generated
    # survivors of a selection without test_train_dir_remains): the Recovered
    # line naming the first checkpoint, the state file rebuilt by the
    # non-writing processes only.
    Mutation(
        "recovered_line_names_the_first", At("Resumed.header_info"),
        "run resumes from {names[-1]} instead", "run resumes from {names[0]} instead",
        [T + "state/test_train_dir_remains.py"]),
    Mutation(
        "state_file_rebuilt_by_readers_only", At("Checkpointer.__init__"),
        "leftovers.rebuild_state_file(train_dir) if writer else []",
        "leftovers.rebuild_state_file(train_dir) if not writer else []",
        [T + "state/test_train_dir_remains.py"]),
    # A user's Input subclass: its labels are not checked in the step (a
    # label outside the classes trains on, or fails in the loss kernel), or
    # its class is not recognised as the user's.
    Mutation(
        "user_input_labels_not_checked", At("TrainStep._batches.got"),
        "            if self.label_check is not None:\n", "            if False:\n",
        [DOORS + "test_a_user_input_subclass_s_labels_are_checked_in_the_step_too"]),
    # The check built after the staging put: TensorFlow chains it after the
    # put, and the towers wait for the next batch (the input wait unseen).
    Mutation(
        "user_input_labels_checked_after_the_put", At("TrainStep._batches"),
        "        if checks:  # only the loss waits for the check, not the forward pass\n",
        "        checks = self._label_checks(batches) if self.label_check is not None else []\n"
        "        if checks:  # only the loss waits for the check, not the forward pass\n",
        [T + "input/test_input_wait.py::test_an_input_bound_run_reports_its_true_wait_share"]),
    Mutation(
        "user_input_not_recognised", At("watch_labels"),
        "    return type(input_source).__name__\n", "    return None\n",
        [DOORS + "test_a_user_input_subclass_s_labels_are_checked_in_the_step_too"]),
    # TensorFlow's error in a step at the command line: its traceback again.
    Mutation(
        "step_kernel_error_traceback", At("main", module="train"),
        "    except _op_error() as err:", "    except ZeroDivisionError as err:",
        [T + "commands/test_step_failure.py"]),
    # TensorFlow's start-up lines: repeats kept, or the library's import not
    # routed through towertrain's.
    Mutation(
        "start_up_lines_repeated", At("once_each"),
        "        if key and key in seen:\n            continue\n", "",
        [T + "package/test_start_up_lines.py"]),
    Mutation(
        "library_imports_tensorflow_plainly", At("__getattr__", module="towertrain"),
        "        tf_import.import_tensorflow()\n", "        pass\n",
        [T + "package/test_start_up_lines.py::"
         "test_the_library_shows_each_start_up_line_once_and_none_when_asked"]),
    # A half-precision transfer carries the step's loss, count and stop
    # requests in its half-precision pack (rounded) instead of a float32 one.
    Mutation(
        "riders_in_the_half_precision_pack", At("LocalExchange.exchange"),
        'extra_values_apart=apart)\n',
        'extra_values_apart=False)\n',
        [T + "recipe/test_compact_transfer.py::"
         "test_a_loss_beyond_float16_s_range_is_carried_in_float32_and_the_step_applies"]),
    # The exchange waits for every gradient (as it did inside the finite
    # check's branch): each tower's gradients pass one op before any pack
    # starts, so no pack overlaps the backward pass.
    Mutation(
        "exchange_inside_the_finite_branch", At("TrainStep._train_step"),
        "        exchanged = self.variables.exchange([r.grads if r else None for r in update.results],\n",
        "        exchanged = self.variables.exchange([tf.identity_n(r.grads) if r else None\n"
        "                                             for r in update.results],\n",
        [T + "engine/test_exchange_graph.py::"
         "test_first_pack_of_the_step_waits_only_for_the_last_layers"]),
    # Pieces of a variable split over two packs put back in the wrong order.
    Mutation(
        "straddling_pieces_misordered", At("scatter"),
        "sorted(pieces[index], key=lambda s: s[0])",
        "sorted(pieces[index], key=lambda s: -s[0])",
        [T + "engine/test_repacking.py::"
         "test_plan_cuts_reverse_order_into_equal_packs_and_round_trips"]),
    # One instance key per pack index whatever the pack count: a second trainer
    # with other packs reuses a key with another shape.
    Mutation(
        "pack_instance_keys_ignore_the_count", At("ClusterExchange.exchange.sum_pack"),
        "            key = self.key(\"grads\") + len(packs) * (len(packs) - 1) // 2 + k\n",
        "            key = self.key(\"grads\") + k\n",
        [T + "engine/test_repacking.py::test_packs_equal_one_pack"]),
    # Hierarchical exchange silently flat: every local device's pack crosses workers.
    Mutation(
        "hierarchical_is_flat", At("ClusterExchange._spec_sum"),
        "        if self.local:\n            return self._hierarchical_sum(flats, key)\n",
        "        if False:\n            return self._hierarchical_sum(flats, key)\n",
        [T + "engine/test_multiworker.py::test_two_workers_equal_one_process_with_four_devices"]),
    # GPU cluster path: only GPU 0's NCCL output kept, the others' NcclAllReduce
    # pruned (its peers then wait forever).
    Mutation(
        "nccl_member_outputs_dropped", At("NcclAllReduce.sum_flats"),
        "        return private_api.nccl_all_sum(flats)  # each output on its input's device\n",
        "        return private_api.nccl_all_sum(flats)[:1]\n",
        [GPU_GRAPH + "test_no_collective_member_is_left_to_be_pruned",
         GPU_GRAPH + "test_cpu_analog_every_member_runs_and_the_sum_arrives",
         T + "package/test_gpu_proof.py"]),
    # Across workers, the other GPUs' NCCL outputs no longer control inputs of
    # their copy of the sum.
    Mutation(
        "nccl_members_not_control_inputs", At("ClusterExchange._hierarchical_sum"),
        "                    [others[i - 1].op] if 0 < i <= len(others) else []):",
        "                    []):",
        [GPU_GRAPH + "test_no_collective_member_is_left_to_be_pruned"]),
    # No ordering chain on a GPU: NCCL launches in any order.
    Mutation(
        "gpu_collectives_unchained", At("DeviceChains.run"),
        "        with tf.control_dependencies([ends[k] for k in keys if k in ends]):",
        "        with tf.control_dependencies([]):",
        [GPU_GRAPH + "test_each_gpu_has_one_ordering_chain"]),
    # The cross-worker sum of a pack without its communication hint (ring over gRPC).
    Mutation(
        "cross_worker_pack_without_hint", At("ClusterExchange._cross_worker_sum"),
        "                ordering_token=token.handle, communication_hint=self._hint(device))",
        "                ordering_token=token.handle, communication_hint=\"auto\")",
        [GPU_GRAPH + "test_cross_worker_collectives_use_nccl_on_gpus_by_default"]),
    # The flat collective's packs without the hint.
    Mutation(
        "flat_collective_without_hint", At("ClusterExchange._all_devices_sum.build"),
        "                        timeout=self.timeout, ordering_token=self._tokens[i].handle,\n"
        "                        communication_hint=self._hint(device))]",
        "                        timeout=self.timeout, ordering_token=self._tokens[i].handle,\n"
        "                        communication_hint=\"auto\")]",
        [GPU_GRAPH + "test_cross_worker_collectives_use_nccl_on_gpus_by_default"]),
    # auto no longer means NCCL on GPUs.
    Mutation(
        "collective_auto_is_ring", At("collective_implementation"),
        '    return "nccl" if device == "gpu" and requested != "ring" else "ring"',
        '    return "nccl" if device == "gpu" and requested == "nccl" else "ring"',
        [GPU_GRAPH + "test_cross_worker_collectives_use_nccl_on_gpus_by_default",
         GPU_GRAPH + "test_the_header_says_how_collectives_cross"]),
    # --collective_implementation=ring ignored on GPUs.
    Mutation(
        "collective_ring_ignored", At("collective_implementation"),
        '    return "nccl" if device == "gpu" and requested != "ring" else "ring"',
        '    return "nccl" if device == "gpu" else "ring"',
        [GPU_GRAPH + "test_ring_is_selectable_and_a_cpu_member_crosses_by_ring"]),
    # --collective_implementation=nccl let through on CPU devices, or with a CPU member.
    Mutation(
        "nccl_implementation_on_cpu_accepted", At("validate_implementation"),
        '    if device != "gpu":\n        fail("collective_implementation"',
        '    if False:\n        fail("collective_implementation"',
        [T + "config/test_exchange_checks.py::test_nccl_is_refused_where_it_cannot_run"]),
    Mutation(
        "nccl_implementation_with_cpu_member_accepted", At("validate_implementation"),
        '    if spec is not None and split_spec(spec)[0] == "pscpu":\n        fail(',
        '    if False:\n        fail(',
        [T + "config/test_exchange_checks.py::test_nccl_is_refused_where_it_cannot_run"]),
    # Every worker decodes whole global batches again (and slices its share after).
    Mutation(
        "workers_decode_whole_batches", At("make_input"),
        "        share = WorkerShare(cluster.num_workers, cluster.task_index, topology.num_towers)\n",
        "        share = None\n",
        [T + "engine/test_multiworker.py::"
         "test_two_workers_on_files_decode_only_their_share_and_equal_one_process"]),
    # A worker's share taken from the first towers, whatever its task.
    Mutation(
        "worker_share_ignores_task", At("WorkerShare.first_tower"),
        "        return self.task_index * self.towers_per_worker\n",
        "        return 0\n",
        [SHARE + "test_cifar_workers_decode_only_their_rows",
         SHARE + "test_a_share_of_an_uneven_batch_is_the_split_of_one_process"]),
    # A file reader's resume ignores the step: it starts from batch 0.
    Mutation(
        "file_reader_resume_ignores_position", At("DatasetInput.resume_after"),
        "            self.start_position.assign(step)\n",
        "            pass\n",
        [SHARE + "test_resume_after_sets_where_the_iterator_starts",
         T + "cluster/test_topology_change.py"]),
    # The file reader's tf.data iterator (a worker's own share prefetched) in the checkpoint.
    Mutation(
        "file_reader_iterator_in_checkpoint", At("DatasetInput.checkpoint_state"),
        "        return None if self.start_position is not None else self._iterator\n",
        "        return self._iterator\n",
        [SHARE + "test_a_file_reader_restarts_at_any_batch_without_decoding_what_it_skips"]),
    # A restart that decodes the examples it skips.
    Mutation(
        "restart_decodes_what_it_skips", At("epoch_batches.one_epoch"),
        "            return data.skip(skipped * global_batch).map(\n"
        "                mapped, num_parallel_calls=tf.data.AUTOTUNE,\n"
        "                deterministic=True).batch(",
        "            return data.map(\n"
        "                mapped, num_parallel_calls=tf.data.AUTOTUNE,\n"
        "                deterministic=True).skip(skipped * global_batch).batch(",
        [SHARE + "test_a_file_reader_restarts_at_any_batch_without_decoding_what_it_skips"]),
    # The queue input let through with several workers (each would decode everything).
    Mutation(
        "queue_input_with_workers_accepted", At("make_input"),
        '        if input_plan.input == "queue":\n            raise InputError(',
        '        if False:\n            raise InputError(',
        [SHARE + "test_the_queue_input_is_refused_with_several_workers"]),
    # Multi-worker: the batch-norm statistics no longer ride in the first pack
    # (a collective of their own, over a group nothing opened before step 1).
    Mutation(
        "stats_not_in_first_pack", At("CollectiveManager.exchange"),
        '            stats = self._stats_extra_values(tower_non_trainable)\n',
        "            stats = None\n",
        [T + "engine/test_gpu_step_facts.py::test_cluster_step_on_gpus",
         GPU_GRAPH + "test_the_step_tail_rides_the_last_pack"]),
    # The step's scalars in a collective of their own after the packs, not
    # riding the last pack.
    Mutation(
        "tail_in_a_collective_of_its_own", At("exchange_packs"),
        '        if not float_packs or extra_values_apart:\n'
        '            extra.append(name)\n',
        '        if not float_packs or extra_values_apart or where == LAST:\n'
        '            extra.append(name)\n',
        [GPU_GRAPH + "test_the_step_tail_rides_the_last_pack"]),
    # The groups opened before step 1 without waiting for each other: no one
    # order of communicator creation across workers.
    Mutation(
        "groups_opened_in_no_order", At("ClusterExchange.build_opener.open_all"),
        "                with tf.control_dependencies(previous):\n",
        "                with tf.control_dependencies([]):\n",
        [T + "engine/test_gpu_step_facts.py::test_cluster_step_on_gpus"]),
    # Each worker opens the groups in its own order (worker 1 reversed).
    Mutation(
        "groups_opened_in_each_workers_order", At("ClusterExchange.groups"),
        "        return [(key, size, members) for key, (size, members) in sorted(found.items())\n",
        "        return [(key, size, members) for key, (size, members)\n"
        "                in sorted(found.items(), reverse=self.task == 1)\n",
        [T + "engine/test_gpu_step_facts.py::test_cluster_step_on_gpus"]),
    # Only the first group opened before step 1: the others' communicators
    # are created by the step, in whatever order each worker reaches them.
    Mutation(
        "groups_partly_opened", At("ClusterExchange.build_opener.open_all"),
        "            for n, (group, size, members) in enumerate(groups):\n",
        "            for n, (group, size, members) in enumerate(groups[:1]):\n",
        [T + "engine/test_gpu_step_facts.py::test_cluster_step_on_gpus"]),
    # Every worker's tower 0 contributes its statistics (summed, not worker 0's).
    Mutation(
        "stats_riders_not_masked", At("CollectiveManager._stats_extra_values"),
        "                keep = self.task == 0 and i == source\n",
        "                keep = i == source\n",
        [T + "engine/test_multiworker.py::test_two_workers_equal_one_process_with_four_devices"]),
    # Each device's verdict from its own share of a pack, not the exchanged
    # sum: a worker (a device) with finite gradients applies alone.
    Mutation(
        "finite_flag_not_exchanged", At("exchange_packs.run"),
        "finite[d].append(tf.reduce_all(tf.math.is_finite(sums[d])))",
        "finite[d].append(tf.reduce_all(tf.math.is_finite(flats[d])))",
        [T + "engine/test_finite_check.py::test_nan_gradients_on_one_tower_apply_nothing_on_any_copy",
         T + "engine/test_multiworker.py::"
         "test_a_non_finite_step_on_one_worker_applies_nothing_on_any"]),
    # The CPU default exchange of collective_all_reduce (hierarchical, measured faster).
    Mutation(
        "collective_default_flat", At("default_spec"),
        '        return "collective" if device == "gpu" else "pscpu/xring"\n',
        '        return "collective" if device == "gpu" else "collective"\n',
        [T + "config/test_exchange_checks.py::test_defaults_and_accepted_specs"]),
    # A refused combination let through.
    Mutation(
        "replicated_takes_a_cross_worker_spec", At("validate_exchange"),
        '    if mode == "replicated" and spec in COLLECTIVE_SPECS:\n',
        '    if mode == "replicated" and spec in ():\n',
        [T + "config/test_exchange_checks.py::test_refused_combinations_name_the_flags"]),
    # The header's packs line.
    Mutation(
        "header_hides_the_packs", At("training_info"),
        '        info.append(("Gradient packs", ',
        '        info.append(("Gradient pack", ',
        [T + "config/test_exchange_checks.py::test_header_prints_the_exchange_and_its_packs"]),
    # Multi-worker: a second signal no longer exits at once.
    Mutation(
        "cluster_second_signal_waits", At("ClusterStop._handle"),
        "        if self.received is not None or self.loop.stop_reason is not None:",
        "        if self.loop.stop_reason is not None:",
        [T + "callbacks/test_cluster_stop.py::test_a_second_signal_exits_at_once"]),
    # The agreed stop step skips the staged batches (workers whose staging
    # differs would stop apart, and the saved input position would skip them).
    Mutation(
        "cluster_stop_before_staged_batches", At("ClusterStop.after_step"),
        "        staged = step + self.handles.staging_depth\n",
        "        staged = step\n",
        [T + "callbacks/test_cluster_stop.py::"
         "test_another_workers_request_stops_after_the_staged_batches"]),
    # SIGUSR1 (the elastic take-back): the workers stop at once instead of
    # at the next periodic checkpoint; past the staged batches' checkpoint,
    # a worker that staged past it would step on alone; a stop at the
    # checkpoint read as a stop now as well.
    Mutation(
        "checkpoint_stop_stops_at_once", At("ClusterStop.after_step"),
        "            boundary = (-(-staged // self.save_steps) * self.save_steps if "
        "self.save_steps\n",
        "            boundary = (staged if self.save_steps\n",
        [T + "callbacks/test_cluster_stop.py::"
         "test_sigusr1_stops_every_worker_right_after_the_next_periodic_checkpoint"]),
    Mutation(
        "checkpoint_stop_inside_the_staged_batches", At("ClusterStop.after_step"),
        "            boundary = (-(-staged // self.save_steps)",
        "            boundary = (-(-step // self.save_steps)",
        [T + "callbacks/test_cluster_stop.py::"
         "test_a_checkpoint_stop_comes_after_the_staged_batches_and_gives_way_to_a_stop_now"]),
    Mutation(
        "checkpoint_stop_read_as_a_stop_now", At("ClusterStop.after_step"),
        "        if requests % AT_CHECKPOINT and", "        if requests and",
        [T + "callbacks/test_cluster_stop.py::"
         "test_sigusr1_stops_every_worker_right_after_the_next_periodic_checkpoint"]),
    Mutation(
        "checkpoint_stop_without_checkpoints_waits_forever",
        At("ClusterStop._handle_at_checkpoint"),
        "        if not self.save_steps:\n", "        if False:\n",
        [T + "callbacks/test_cluster_stop.py::"
         "test_sigusr1_without_periodic_checkpoints_stops_at_the_same_step_as_sigterm"]),
    # A second signal during a long step exits at once (the watcher
    # thread on signal.set_wakeup_fd); without it the Python handler waits for the step.
    Mutation(
        "signals_without_wakeup_watcher", At("StopOnSignal.before_train"),
        "        self._previous_fd = signal.set_wakeup_fd(writer.fileno(), "
        "warn_on_full_buffer=False)\n",
        "        self._previous_fd = signal.set_wakeup_fd(-1)\n",
        [T + "callbacks/test_signals.py::"
         "test_a_second_sigint_during_a_long_step_exits_at_once_with_130"]),
    # Ctrl-C while the CLI starts (imports, building): KeyboardInterrupt's traceback.
    Mutation(
        "ctrl_c_at_start_traceback", At("run_app"),
        "    previous = signal.signal(signal.SIGINT, lambda signum, frame: _exit_on_sigint(command,\n"
        "                                                                                  stderr))\n"
        "    try:\n        app.run(main, flags_parser=flags_parser)\n"
        "    except KeyboardInterrupt:  # raised where a handler of TensorFlow's took over\n"
        "        _exit_on_sigint(command, stderr)\n",
        "    previous = signal.getsignal(signal.SIGINT)\n"
        "    try:\n        app.run(main, flags_parser=flags_parser)\n",
        [T + "callbacks/test_signals.py::test_ctrl_c_while_the_cli_starts_is_one_line_and_status_130"]),
    # The step watchdog: a blocked step is never ended / the phase not named /
    # the limit not the slowest step after warm-up.
    Mutation(
        "watchdog_never_fires", At("Watchdog._watch"),
        "            if ran > limit:\n", "            if False:\n",
        [T + "callbacks/test_step_watchdog.py::"
         "test_a_blocked_step_ends_the_process_naming_step_and_phase_with_the_checkpoint_kept"]),
    Mutation(
        "watchdog_phase_not_marked", At("Trainer._step"),
        "                watchdog.mark(watchdog.STEP_FUNCTION, self._step_phase)\n", "",
        [T + "callbacks/test_step_watchdog.py::"
         "test_a_blocked_step_ends_the_process_naming_step_and_phase_with_the_checkpoint_kept"]),
    # Inside the step function: the exchange's mark set before the towers'
    # gradients are in (every mark at once), or the step's mark never read.
    Mutation(
        "watchdog_exchange_marked_before_the_gradients", At("PhaseMarks.enter"),
        "                [tf.group(*tensors)] if tensors else []):\n", "                []):\n",
        [T + "callbacks/test_step_watchdog.py::"
         "test_the_line_names_the_phase_the_step_function_hung_in"]),
    Mutation(
        "watchdog_step_mark_not_read", At("_read_phase"),
        "    if variable is None:\n", "    if True:\n",
        [T + "callbacks/test_step_watchdog.py::"
         "test_the_line_names_the_phase_the_step_function_hung_in"]),
    Mutation(
        "watchdog_limit_from_the_last_step", At("Watchdog.finished"),
        "            self.slowest = max(self.slowest or 0.0, seconds)\n",
        "            self.slowest = seconds\n",
        [T + "callbacks/test_step_watchdog.py::"
         "test_the_automatic_limit_is_ten_times_the_slowest_step_after_warm_up_at_least_300"]),
    # An emulated half precision runs without the confirmation flag.
    Mutation(
        "emulated_precision_not_refused", At("check", module="native_precision"),
        "    if not support.native and not precision.allow_emulated_precision:\n",
        "    if False:\n",
        [T + "recipe/test_native_precision.py::"
         "test_an_emulated_precision_is_refused_with_its_measured_slowdown"]),
    # --num_gpus=N without --device on a machine without GPU: silent CPU towers.
    Mutation(
        "implicit_cpu_towers", At("check_implicit_cpu_towers"),
        "    if device is None and count > 1 and not num_physical_gpus():\n",
        "    if False:\n",
        [T + "config/test_params.py::"
         "test_several_towers_without_device_or_gpu_ask_for_device_cpu"]),
    # Params(num_gpus="2") reaches a comparison (TypeError) instead of a named error.
    Mutation(
        "params_types_unchecked", At("validate"),
        "    _check_types(p)\n", "",
        [T + "config/test_params.py::test_bad_values_name_the_flag"]),
    # Params(num_epochs) and the input's num_epochs disagree: OUT_OF_RANGE mid-run.
    Mutation(
        "epochs_disagreement_let_through", At("agree", module="epochs"),
        "    if given != wanted:\n", "    if False:\n",
        [T + "input/test_library_epochs.py::"
         "test_params_and_input_epochs_that_differ_are_refused_naming_both"]),
    # An endless in-memory input forgets its length: Params(num_epochs) refused.
    Mutation(
        "arrays_forget_their_length", At("from_arrays"),
        "            result.known_examples, result.epochs_fn = len(images), epochs\n",
        "            pass\n",
        [T + "input/test_library_epochs.py::"
         "test_params_epochs_over_an_endless_in_memory_input_train_exact_epochs"]),
    # A final keras.layers.Softmax() trains on probabilities unnoticed.
    Mutation(
        "softmax_layer_not_detected", At("check_logits"),
        "    ends_in_softmax = isinstance(last, keras.layers.Softmax) or (\n",
        "    ends_in_softmax = (\n",
        [CHECKS + "test_a_final_softmax_is_refused_in_each_of_its_three_forms"]),
    # A frozen model (IndexError in the variable manager), one without weights
    # ("not built"), one of two inputs ("in user code:"), a call's error text.
    Mutation(
        "frozen_model_not_refused", At("check_built"),
        "    if model.weights and not model.trainable_weights:\n", "    if False:\n", [CHECKS + "test_a_frozen_model_a_model_without_weights_and_a_two_input_model_are_named"]),
    Mutation(
        "weightless_model_called_unbuilt", At("check_built"),
        "    if model.built and _inputs(model) and not model.weights:\n", "    if False:\n",
        [CHECKS + "test_a_frozen_model_a_model_without_weights_and_a_two_input_model_are_named"]),
    Mutation(
        "two_input_model_not_refused", At("check_built"),
        "    if len(_inputs(model)) > 1:\n", "    if False:\n", [CHECKS + "test_a_frozen_model_a_model_without_weights_and_a_two_input_model_are_named"]),
    Mutation(
        "model_call_error_first_line", At("check_no_variables_on_call"),
        'f"{_shape(spec.shape[1:])}: {tf_errors.error_text(err)}") from err',
        'f"{_shape(spec.shape[1:])}: {str(err).splitlines()[0]}") from err',
        [CHECKS + "test_a_model_call_failure_names_the_error_not_in_user_code"]),
    # export of a register_model model from the plain command: 'unknown model'.
    Mutation(
        "export_unregistered_unknown_model", At("export"),
        "    _check_registered(model_name, train_dir, checkpoint)\n", "",
        [T + "state/test_export.py::"
         "test_export_of_a_model_a_script_registered_says_to_export_from_that_script"]),
    # ImageNet label 0 / a PNG: a TensorFlow dump mid warm-up, up front or later.
    Mutation(
        "imagenet_sample_unchecked", At("dataset_input", module="imagenet"),
        "    num_examples = sum(count_records(f) for f in files)\n    check_sample(files, "
        "num_classes, label_offset)\n    if train:",
        "    num_examples = sum(count_records(f) for f in files)\n    if train:", [T + "input/test_input_readers.py::test_imagenet_labels_and_images_are_checked_up_front_and_named_later"]),
    Mutation(
        "imagenet_step_label_dump", At("_READERS", module="in_step"),
        '_READERS = ((tf_errors.SHARD_LABEL_CHECK, _shard_label),', '_READERS = ((tf_errors.SHARD_LABEL_CHECK, lambda *fields: None),', [T + "input/test_input_readers.py::test_imagenet_labels_and_images_are_checked_up_front_and_named_later"]),
    # A step's input-pipeline error: TensorFlow's page instead of one line.
    Mutation(
        "generator_error_page", At("Trainer.step"),
        "            if not step_lib.from_input_pipeline(err):\n                raise\n",
        "            raise\n",
        [CHECKS + "test_a_bad_element_mid_run_is_one_line_naming_the_input"]),
    Mutation(
        "reader_error_page", At("Trainer.step"),
        '            if "\\n" not in rest:\n', "            if True:\n",
        [T + "engine/test_step_error_blame.py::test_an_input_pipeline_error_in_a_step_names_the_data"]),
    # EvalData: labels outside the classes scored 0.0 / single examples' traceback.
    Mutation(
        "eval_labels_unchecked", At("Evaluator.tally"),
        "            check_labels(labels, self.model, eval_data)\n", "", [CHECKS + "test_eval_data_is_checked_as_training_input_is"]),
    Mutation(
        "eval_data_unbatched_unchecked", At("eval_data_for"),
        "    check_batched(eval_data)\n", "", [CHECKS + "test_eval_data_is_checked_as_training_input_is"]),
    # NaN blamed on the learning rate: from_arrays data, a loss_fn, step 1's input.
    Mutation(
        "nan_arrays_accepted", At("from_arrays"),
        "    array_checks.check_finite(images, labels)\n", "", [CHECKS + "test_nan_says_where_it_came_from_the_input_or_the_loss_not_the_learning_rate"]),
    Mutation(
        "nan_loss_fn_accepted", At("loss_fn_problem"),
        "    if finite:\n        return None\n", "    if True:\n        return None\n",
        [CHECKS + "test_nan_says_where_it_came_from_the_input_or_the_loss_not_the_learning_rate"]),
    Mutation(
        "first_step_nan_blames_the_learning_rate", At("DivergenceGuard.after_step"),
        "        if step == 1 and self.loop is not None and self.loop.start_step == 0:\n",
        "        if False:\n", [CHECKS + "test_nan_says_where_it_came_from_the_input_or_the_loss_not_the_learning_rate"]),
    # Written paths not checked before the first step.
    Mutation(
        "written_paths_unchecked", At("check", module="writable"),
        "        why = problem(path, is_file)\n", "        why = None\n",
        [T + "state/test_writable_paths.py::"
         "test_the_library_checks_every_path_before_training",
         T + "state/test_writable_paths.py::"
         "test_export_checks_its_output_before_the_work"]),
    # Only the first of several unknown flags named.
    Mutation(
        "unknown_flags_one_at_a_time", At("flags_parser.parse"),
        "            message = (unknown_flags_message(argv, err) if friendly_errors "
        "else str(err))\n",
        "            message = flag_error_message(err)\n",
        [T + "commands/test_cli.py::test_flag_syntax_errors_are_one_line_and_exit_2"]),
    # A user's numpy input announced as the model's default dataset.
    Mutation(
        "header_names_the_default_dataset", At("training_info"),
        "{input_origin or plan.dataset} (",
        "{plan.dataset} (",
        [T + "callbacks/test_honest_output.py"]),
    # from_arrays(global_batch=0) reaches TensorFlow.
    Mutation(
        "global_batch_unchecked", At("from_arrays"),
        '    check_global_batch("from_arrays", global_batch)\n', "",
        [T + "input/test_library_epochs.py::test_a_bad_global_batch_is_refused_where_it_is_given"]),
    # export --include_preprocessing standardizes differently from --eval.
    Mutation(
        "export_preprocessing_differs_from_eval", At("with_eval_preprocessing"),
        "    x = (x - mean) / ops.maximum(std, 1.0 / float(hwc[0] * hwc[1] * hwc[2]) ** 0.5)\n",
        "    x = (x - mean) / 64.0\n",
        [T + "state/test_export_preprocessing.py"]),
    # docs/flag_tests.md rows: each flag's value ignored, its row's test fails.
    Mutation(
        "datasets_prefetch_buffer_size_ignored", At("dataset_options_of"),
        "        prefetch_buffer_size=input_plan.datasets_prefetch_buffer_size,\n",
        "        prefetch_buffer_size=None,\n",
        [T + "input/test_dataset_options.py::"
         "test_prefetch_buffer_and_private_threads_are_on_the_dataset"]),
    Mutation(
        "datasets_num_private_threads_ignored", At("dataset_options_of"),
        "        num_private_threads=input_plan.datasets_num_private_threads,\n",
        "        num_private_threads=None,\n",
        [T + "input/test_dataset_options.py::"
         "test_prefetch_buffer_and_private_threads_are_on_the_dataset"]),
    Mutation(
        "datasets_use_prefetch_ignored", At("dataset_options_of"),
        "        use_prefetch=input_plan.datasets_use_prefetch,\n",
        "        use_prefetch=True,\n",
        [T + "input/test_dataset_options.py::test_no_prefetch_leaves_the_prefetch_out"]),
    Mutation(
        "datasets_use_caching_ignored", At("dataset_options_of"),
        "        use_caching=input_plan.datasets_use_caching,\n",
        "        use_caching=False,\n",
        [T + "input/test_dataset_options.py::test_caching_reads_the_files_once"]),
    Mutation(
        "datasets_interleave_cycle_length_ignored", At("dataset_options_of"),
        "        interleave_cycle_length=input_plan.datasets_parallel_interleave_cycle_length,\n",
        "        interleave_cycle_length=None,\n",
        [T + "input/test_dataset_options.py::test_interleave_options_are_on_the_imagenet_pipeline"]),
    Mutation(
        "datasets_sloppy_interleave_not_read", At("dataset_options_of"),
        "        sloppy_interleave=input_plan.datasets_sloppy_parallel_interleave,\n",
        "        sloppy_interleave=False,\n",
        [T + "input/test_dataset_options.py::test_interleave_options_are_on_the_imagenet_pipeline"]),
    Mutation(
        "datasets_interleave_prefetch_ignored", At("dataset_options_of"),
        "        interleave_prefetch=input_plan.datasets_parallel_interleave_prefetch,\n",
        "        interleave_prefetch=None,\n",
        [T + "input/test_dataset_options.py::test_interleave_options_are_on_the_imagenet_pipeline"]),
    Mutation(
        "datasets_repeat_cached_sample_not_read", At("dataset_options_of"),
        "        repeat_cached_sample=input_plan.datasets_repeat_cached_sample)\n",
        "        repeat_cached_sample=False)\n",
        [T + "input/test_dataset_options.py::test_repeat_cached_sample_repeats_one_record"]),
    Mutation(
        "gpu_indices_not_passed_to_devices", At("prepare"),
        '                         indices=topology.gpu_indices)',
        '                         indices=None)',
        [T + "engine/test_runtime_flags.py::"
         "test_gpu_indices_put_towers_on_those_gpus_in_that_order"]),
    Mutation(
        "sync_on_finish_ignored", At("sync_after_step"),
        "    if not runtime.sync_on_finish:\n        return None\n",
        "    if True:\n        return None\n",
        [T + "engine/test_runtime_flags.py::"
         "test_sync_on_finish_waits_for_the_devices_after_every_step"]),
    Mutation(
        "gradient_repacking_ignored_replicated", At("ReplicatedManager._all_reduce"),
        "            num_packs=exchange.gradient_repacking, pack_bytes=",
        "            num_packs=0, pack_bytes=",
        [T + "engine/test_exchange_graph.py::"
         "test_first_pack_of_the_step_waits_only_for_the_last_layers"]),
    Mutation(
        "gradient_repacking_ignored_collective", At("ClusterExchange.exchange"),
        "        packs = packing.plan_for_exchange(per_device[0], self.options)\n",
        "        packs = packing.plan(per_device[0], 0)\n",
        [T + "engine/test_exchange_graph.py::"
         "test_first_pack_of_the_step_waits_only_for_the_last_layers"]),
    Mutation(
        "loss_type_to_report_ignored", At("from_plan"),
        '                       report_base=loss.loss_type_to_report == "base_loss")',
        "                       report_base=False)",
        [T + "engine/test_loss_report.py::"
         "test_base_loss_leaves_the_weight_decay_out_and_total_loss_has_it"]),
    Mutation(
        "allow_emulated_precision_ignored", At("check", module="native_precision"),
        "    if not support.native and not precision.allow_emulated_precision:",
        "    if not support.native:",
        [T + "recipe/test_native_precision.py::"
         "test_an_emulated_precision_runs_when_allowed_and_the_header_says_so"]),
    Mutation(
        "kmp_settings_ignored", At("environment"),
        "KMP_SETTINGS=str(kmp_settings),",
        "KMP_SETTINGS=\"1\",",
        [T + "engine/test_runtime_flags.py::"
         "test_cli_applies_threads_xla_and_mkl_environment_before_tensorflow_starts"]),
    Mutation(
        "display_perf_ewma_not_passed", At("default_callbacks"),
        "ewma=out.display_perf_ewma, loss_name=", "ewma=None, loss_name=",
        [T + "engine/test_loss_report.py::test_display_perf_ewma_reaches_the_step_printer"]),
    Mutation(
        "variable_consistency_ignored", At("ReplicatedManager.create"),
        '                          if self.options.variable_consistency == "relaxed" else None)',
        "                          if False else None)",
        [T + "engine/test_variable_consistency.py::test_relaxed_applies_each_sum_one_step_late"]),
    Mutation(
        "gradient_accumulation_steps_ignored", At("split"),
        "        return Split(per_device or default_per_device, accumulation)",
        "        return Split(per_device or default_per_device, 1)",
        [T + "recipe/test_accumulation.py::"
         "test_full_batches_equal_stock_keras_gradient_accumulation"]),
    Mutation(
        "allow_growth_ignored", At("_apply_runtime"),
        '            _apply("allow_growth", runtime.allow_growth,',
        '            _apply("allow_growth", False,',
        [T + "engine/test_runtime_flags.py::test_allow_growth_sets_memory_growth_on_every_gpu"]),
    Mutation(
        "forward_only_trains", At("main", module="train"),
        "        elif forward_only:\n            from towertrain.engine.evaluation import inference\n",
        "        elif False:\n            from towertrain.engine.evaluation import inference\n",
        [T + "engine/test_inference.py::"
         "test_the_command_line_prints_images_per_sec_and_writes_nothing"]),
    Mutation(
        "cluster_source_ignored", At("_resolve"),
        "    source = params.cluster_source\n", '    source = "auto"\n',
        [T + "cluster/test_cluster_sources.py::"
         "test_tf_config_with_a_chief_job_and_source_conflicts"]),
    Mutation(
        "graph_file_ignored", At("_observers"),
        "    if out.graph_file:\n", "    if False:\n",
        [T + "callbacks/test_run_files.py::"
         "test_graph_file_benchmark_log_and_raw_trace_are_written"]),
    Mutation(
        "benchmark_log_dir_ignored", At("_observers"),
        "    if out.benchmark_log_dir:\n", "    if False:\n",
        [T + "callbacks/test_run_files.py::"
         "test_graph_file_benchmark_log_and_raw_trace_are_written"]),
    Mutation(
        "xla_jit_not_set", At("_apply_runtime"),
        "    if runtime.xla:\n", "    if False:\n",
        [T + "engine/test_runtime_flags.py::"
         "test_cli_applies_threads_xla_and_mkl_environment_before_tensorflow_starts"]),
    Mutation(
        "num_inter_threads_ignored", At("_apply_runtime"),
        '    _apply("num_inter_threads", runtime.num_inter_threads,',
        '    _apply("num_inter_threads", None,',
        [T + "engine/test_runtime_flags.py::"
         "test_cli_applies_threads_xla_and_mkl_environment_before_tensorflow_starts"]),
    Mutation(
        "num_intra_threads_ignored", At("intra_op_threads"),
        "    if num_intra_threads is not None:\n        return num_intra_threads\n",
        "",
        [T + "engine/test_runtime_flags.py::"
         "test_cli_applies_threads_xla_and_mkl_environment_before_tensorflow_starts"]),
    Mutation(
        "mkl_ignored", At("environment"),
        "    if mkl:\n        env.update(", "    if False:\n        env.update(",
        [T + "engine/test_runtime_flags.py::"
         "test_cli_applies_threads_xla_and_mkl_environment_before_tensorflow_starts"]),
    Mutation(
        "kmp_blocktime_ignored", At("environment"),
        "KMP_BLOCKTIME=str(kmp_blocktime),", 'KMP_BLOCKTIME="0",',
        [T + "engine/test_runtime_flags.py::"
         "test_cli_applies_threads_xla_and_mkl_environment_before_tensorflow_starts"]),
    Mutation(
        "kmp_affinity_ignored", At("environment"),
        "KMP_AFFINITY=kmp_affinity)", 'KMP_AFFINITY="granularity=fine,verbose,compact,1,0")',
        [T + "engine/test_runtime_flags.py::"
         "test_cli_applies_threads_xla_and_mkl_environment_before_tensorflow_starts"]),
    Mutation(
        "eval_interval_secs_ignored", At("run_eval"),
        "    following = p.eval_interval_secs > 0\n", "    following = False\n",
        [T + "commands/test_eval_follower.py::"
         "test_evaluator_beside_a_training_run_scores_each_checkpoint_once_until_the_final"]),
    # tf_cnn_benchmarks' runtime, input-pipeline and output flags.
    Mutation(
        "intra_threads_not_applied", At("_apply_runtime"),
        "           threading.set_intra_op_parallelism_threads,\n",
        "           lambda value: None,\n",
        [T + "engine/test_runtime_flags.py::"
         "test_cli_applies_threads_xla_and_mkl_environment_before_tensorflow_starts"]),
    Mutation(
        "xla_cpu_jit_flag_left_out", At("environment"),
        '    if xla and device != "gpu":',
        "    if False:",
        [T + "engine/test_runtime_flags.py::"
         "test_cli_applies_threads_xla_and_mkl_environment_before_tensorflow_starts"]),
    Mutation(
        "mkl_exports_the_wrong_value", At("environment"),
        "env.update(KMP_BLOCKTIME=str(kmp_blocktime),",
        "env.update(KMP_BLOCKTIME=str(kmp_settings),",
        [T + "engine/test_runtime_flags.py::"
         "test_cli_applies_threads_xla_and_mkl_environment_before_tensorflow_starts",
         T + "engine/test_runtime_flags.py::"
         "test_mkl_environment_after_tensorflow_import_is_an_error"]),
    Mutation(
        "kmp_flags_accepted_without_mkl", At("ProcessSettings.refuse_given"),
        '        if not p.mkl:\n'
        '            for flag in (',
        '        if False:\n'
        '            for flag in (',
        [T + "engine/test_runtime_flags.py::test_bad_runtime_flags_name_the_flag"]),
    Mutation(
        "allow_growth_not_applied", At("_apply_runtime"),
        "    if runtime.allow_growth is not None:",
        "    if False:",
        [T + "engine/test_runtime_flags.py::test_allow_growth_sets_memory_growth_on_every_gpu"]),
    Mutation(
        "gpu_indices_ignored", At("tower_devices"),
        '    return [f"/{device}:{i}" for i in indices]',
        '    return [f"/{device}:{i}" for i in range(count)]',
        [T + "engine/test_runtime_flags.py::"
         "test_gpu_indices_put_towers_on_those_gpus_in_that_order"]),
    Mutation(
        "sync_on_finish_never_syncs", At("Trainer._step"),
        "                self._sync_devices()",
        "                pass",
        [T + "engine/test_runtime_flags.py::"
         "test_sync_on_finish_waits_for_the_devices_after_every_step"]),
    Mutation(
        "datasets_cache_dropped", At("on_records"),
        "        records = records.cache()  # one cache, shared by every epoch's pass",
        "        pass",
        [T + "input/test_dataset_options.py::test_caching_reads_the_files_once"]),
    Mutation(
        "datasets_prefetch_buffer_ignored", At("on_batches"),
        "batches.prefetch(options.prefetch_buffer_size or tf.data.AUTOTUNE)",
        "batches.prefetch(tf.data.AUTOTUNE)",
        [T + "input/test_dataset_options.py::"
         "test_prefetch_buffer_and_private_threads_are_on_the_dataset"]),
    Mutation(
        "datasets_private_threads_ignored", At("on_batches"),
        "threading.threading.private_threadpool_size = options.num_private_threads",
        "threading.threading.private_threadpool_size = None",
        [T + "input/test_dataset_options.py::"
         "test_prefetch_buffer_and_private_threads_are_on_the_dataset"]),
    Mutation(
        "datasets_sloppy_interleave_ignored", At("interleave"),
        "deterministic=deterministic and not options.sloppy_interleave)",
        "deterministic=deterministic)",
        [T + "input/test_dataset_options.py::"
         "test_interleave_options_are_on_the_imagenet_pipeline"]),
    Mutation(
        "datasets_repeat_cached_sample_ignored", At("on_records"),
        "        records = records.take(1).cache().repeat(num_examples)",
        "        records = records",
        [T + "input/test_dataset_options.py::test_repeat_cached_sample_repeats_one_record"]),
    Mutation(
        "graph_file_always_text", At("GraphFile.before_train"),
        '        as_text = self.path.endswith("txt")',
        "        as_text = True",
        [T + "callbacks/test_run_files.py::test_graph_file_binary_unless_the_name_ends_in_txt"]),
    Mutation(
        "benchmark_log_wrong_step", At("BenchmarkLogFile.after_step"),
        'self.log_metric("current_examples_per_sec", mean, "images/sec", step)',
        'self.log_metric("current_examples_per_sec", mean, "images/sec", step - 1)',
        [T + "callbacks/test_run_files.py::"
         "test_graph_file_benchmark_log_and_raw_trace_are_written"]),
    Mutation(
        "chrome_trace_format_ignored", At("_observers"),
        "write, chrome=out.use_chrome_trace_format))",
        "write))",
        [T + "callbacks/test_run_files.py::"
         "test_graph_file_benchmark_log_and_raw_trace_are_written"]),
    Mutation(
        "fp16_vars_ignored", At("Precision.keras_policy"),
        'if self.half == "float16" and self.fp16_vars:',
        'if False:',
        [T + "recipe/test_fp16_vars.py"]),
    Mutation(
        "relaxed_consistency_not_deferred", At("ReplicatedManager._update"),
        "            grads = self._deferred.swap(copy, grads)",
        "            self._deferred.swap(copy, grads)",
        [T + "engine/test_variable_consistency.py::"
         "test_relaxed_applies_each_sum_one_step_late"]),
    Mutation(
        "batch_group_size_ignored", At("Trainer._make_feed"),
        'group=self.plan.input.batch_group_size)',
        'group=1)',
        [T + "engine/test_batch_group_size.py::"
         "test_groups_of_batches_are_staged_every_group_steps"]),
    # A category-3 tf_cnn_benchmarks flag given on the command line is refused
    # (README: Coming from tf_cnn_benchmarks).
    Mutation(
        "tfcnn_refused_flags_accepted", At("check_refused"),
        "        if flag.category == tfcnn_flags.IMPLEMENTED or flag.name not in "
        "flag_values:\n",
        "        if flag.category != tfcnn_flags.ACCEPTED_VALUE or flag.name not in "
        "flag_values:\n",
        [T + "config/test_tfcnn_flags.py::test_category_3_is_refused_with_its_line"]),
    # --forward_only runs the model in inference mode (batch norm's moving statistics).
    Mutation(
        "forward_only_runs_training_mode", At("ForwardStep._step"),
        "                                         training=False).outputs\n",
        "                                         training=True).outputs\n",
        [T + "engine/test_inference.py::"
         "test_forward_only_runs_inference_mode_and_changes_nothing"]),
    # --forward_only writes nothing: --train_dir is refused with it.
    Mutation(
        "forward_only_accepts_train_dir", At("Checkpoints.train_dir"),
        ',\n'
        '        forward_only=False)',
        ')',
        [T + "engine/test_inference.py::test_flags_only_training_reads_are_refused"]),
    # docs/migration.md's flag table is what the data generates (a stale doc fails).
    Mutation(
        "migration_doc_table_stale", At("_CATEGORY"),
        'table.REFUSED: "3 refused"}',
        'table.REFUSED: "3 not supported"}',
        [T + "config/test_tfcnn_flags.py::test_migration_doc_is_current_and_shows_each_refusal"]),
    # --gradient_accumulation_steps: the update is not rescaled to the mean over
    # its examples (each micro-batch's loss divided by the nominal global batch).
    Mutation(
        "accumulation_no_rescale", At("TrainStep._take_update"),
        "            ratio = tf.cast(self.nominal, tf.float32) / tf.cast(count, tf.float32)\n",
        "            ratio = tf.constant(1.0)\n",
        [T + "recipe/test_accumulation.py::test_update_equals_one_step_on_its_batches_concatenated",
         T + "recipe/test_accumulation.py::test_full_batches_equal_stock_keras_gradient_accumulation"]),
    # Accumulators never zeroed: the next update adds the previous ones' sums.
    Mutation(
        "accumulators_not_zeroed", At("Accumulators.take"),
        "                for total in self.grads[i]:\n                    total.assign(tf.zeros_like(total))\n"
        "        with tf.device(\"/cpu:0\"):\n            totals",
        "        with tf.device(\"/cpu:0\"):\n            totals",
        [T + "recipe/test_accumulation.py::test_update_equals_one_step_on_its_batches_concatenated"]),
    # An epoch's last update does not stop at the epoch's end (always K batches).
    Mutation(
        "accumulation_spans_epochs", At("AccumulationPlan.micro_batches"),
        "        if self.batches_per_epoch is None:\n            return self.steps\n"
        "        first = (step",
        "        if True:\n            return self.steps\n        first = (step",
        [T + "recipe/test_accumulation.py::test_update_equals_one_step_on_its_batches_concatenated",
         T + "recipe/test_accumulation.py::test_plan_splits_epochs_into_updates"]),
    # Batch-norm statistics kept only at the update, not after every micro-batch
    # as stock Keras does.
    Mutation(
        "accumulation_statistics_once_per_update", At("TrainStep._accumulate"),
        "        accumulate.keep_statistics(self.variables, results)\n", "",
        [T + "recipe/test_accumulation.py::test_full_batches_equal_stock_keras_gradient_accumulation"]),
    # The schedule's epoch counted in batches instead of updates.
    Mutation(
        "accumulation_schedule_in_batches", At("_learning_rate"),
        "    steps_per_epoch, epoch_text = steps.updates_per_epoch, None\n",
        "    steps_per_epoch, epoch_text = steps.batches_per_epoch, None\n",
        [T + 'plan/test_plan.py::test_learning_rate_epoch_boundaries_under_accumulation_count_updates',
         T + "recipe/test_accumulation.py::test_schedule_counts_updates"]),
    # The input position counted in updates: resume skips to the wrong batch.
    Mutation(
        "accumulation_resume_position_in_updates", At("FeedPosition.position"),
        '        return self.accumulation.batches_before(step)\n',
        '        return step\n',
        [T + "state/test_resume_accumulation.py::test_every_example_once_per_epoch_across_a_kill"]),
    # A stop drains only the staged batches, ending mid-update.
    Mutation(
        "accumulation_drain_mid_update", At("FeedPosition.drain"),
        '        if not self.accumulating:\n            return self.staging.drain()\n',
        '        if True:\n            return self.staging.drain()\n',
        [T + "state/test_resume_accumulation.py::test_stop_mid_epoch_then_resume_equals_uninterrupted"]),
    # Micro-batches exchange: every one goes through the update path.
    Mutation(
        "accumulation_exchanges_every_micro_batch", At("TrainStep._train_step"),
        "        if phase == accumulate.ACCUMULATE:\n            return self._accumulate(",
        "        if False:\n            return self._accumulate(",
        [T + "recipe/test_accumulation.py::test_micro_batches_before_the_last_exchange_nothing"]),
    # Accumulation with --variable_update=independent let through.
    Mutation(
        "accumulation_independent_allowed", At("StepSettings.refuse"),
        "    if steps > 1 and p.variable_update == \"independent\":",
        "    if False:",
        [T + "recipe/test_accumulation.py::test_refused_combinations_name_the_flags"]),
    # --gradient_accumulation_steps x clipping: each micro-batch clipped on its
    # own before it is accumulated (not the update's mean gradient once).
    Mutation(
        "accumulation_clip_per_micro_batch", At("TrainStep._accumulate"),
        "        loss, correct, all_finite = self._local_sums(results, finite)\n"
        "        done = self.accumulators.add(",
        "        results = [r._replace(grads=__import__('towertrain.recipe.gradients', "
        "fromlist=['clip_for']).clip_for(self.variables.clipping, r.grads)) if r is not None "
        "else r "
        "for r in results]\n"
        "        loss, correct, all_finite = self._local_sums(results, finite)\n"
        "        done = self.accumulators.add(",
        [T + "recipe/test_accumulation_combined.py::test_clip_acts_once_on_the_updates_mean_gradient"]),
    # x loss scaling: the dynamic scale's finite-step count advances per micro-batch.
    Mutation(
        "accumulation_loss_scale_per_micro_batch", At("TrainStep._accumulate"),
        "        done = self.accumulators.add(results, local_count, loss, correct, all_finite)\n",
        "        done = self.accumulators.add(results, local_count, loss, correct, all_finite)\n"
        "        if self.loss_scale:\n            self.loss_scale.update(all_finite)\n",
        [T + "recipe/test_accumulation_combined.py::test_dynamic_loss_scale_counts_updates",
         T + "recipe/test_accumulation_combined.py::test_overflow_in_one_micro_batch_skips_the_whole_update"]),
    # x --scale_learning_rate=linear: scaled by the global batch, not global batch x K.
    Mutation(
        "accumulation_linear_scaling_per_batch", At("_learning_rate"),
        "                                      global_batch=batches.per_update,\n",
        "                                      global_batch=batches.global_batch,\n",
        [T + "recipe/test_accumulation_combined.py::test_linear_scaling_and_warmup_count_updates"]),
    # x warmup: the warmup epochs counted in batches instead of updates.
    Mutation(
        "accumulation_warmup_in_batches", At("learning_rate", module="schedule"),
        "        warmup_steps = _epochs_to_steps(p.num_learning_rate_warmup_epochs, steps_per_epoch)",
        "        warmup_steps = _epochs_to_steps(p.num_learning_rate_warmup_epochs,\n"
        "                                        steps_per_epoch * p.gradient_accumulation_steps)",
        [T + "recipe/test_accumulation_combined.py::test_linear_scaling_and_warmup_count_updates"]),
    # x collective_all_reduce: an update's example count not summed over the
    # workers (each rescales by its own count, whole steps and updates alike).
    Mutation(
        "accumulation_multiworker_local_count", At("TrainStep._decide"),
        "                    share = tf.cast(totals.count, tf.float32) / tf.cast(self.nominal, tf.float32)\n",
        "                    share = tf.cast(update.count, tf.float32) / tf.cast(self.nominal, tf.float32)\n",
        [T + "engine/test_multiworker.py::"
         "test_two_workers_accumulating_equal_one_process_with_four_devices",
         T + "engine/test_multiworker.py::test_two_workers_equal_one_process_with_four_devices"]),
    # The count in the step's tail: the update no longer divides
    # the exchanged gradients by count / nominal (the loss still is).
    Mutation(
        "tail_gradients_not_rescaled", At("TrainStep._decide"),
        "                    scale = share if scale is None else scale * share\n",
        "                    scale = scale\n",
        [T + "engine/test_multiworker.py::test_two_workers_equal_one_process_with_four_devices",
         T + "engine/test_multiworker.py::test_the_count_in_the_tail_gives_one_process_s_update"]),
    # x the count left out of the last pack's riders (zero examples: nothing applied).
    Mutation(
        "count_left_out_of_tail", At("extra_values"),
        "            values = [losses[d], counts[d], stops if d == 0 else None]\n",
        "            values = [losses[d], None, stops if d == 0 else None]\n",
        [T + "engine/test_multiworker.py::test_two_workers_equal_one_process_with_four_devices"]),
    # x the loss left out of the last pack's riders: an infinite loss with
    # finite gradients (here an earlier micro-batch's) is applied.
    Mutation(
        "loss_left_out_of_tail", At("extra_values"),
        "            values = [losses[d], counts[d], stops if d == 0 else None]\n",
        "            values = [None, counts[d], stops if d == 0 else None]\n",
        [T + "engine/test_finite_check.py::"
         "test_an_infinite_loss_in_an_earlier_micro_batch_skips_the_update"]),
    # x the count summed before the towers again (a second scalar collective).
    Mutation(
        "count_before_towers_again", At("TrainStep.__init__"),
        "        self.fold_count = (num_workers > 1 and not half_precision\n"
        "                           and not exchange.compact_gradient_transfer)\n",
        "        self.fold_count = False\n",
        [GPU_GRAPH + "test_the_step_tail_rides_the_last_pack"]),
    # x half precision folded too (its backward rounds the nominal-scaled loss).
    Mutation(
        "half_precision_count_folded", At("TrainStep.__init__"),
        "        self.fold_count = (num_workers > 1 and not half_precision\n",
        "        self.fold_count = (num_workers > 1\n",
        [GPU_GRAPH + "test_in_half_precision_the_count_goes_before_the_towers"]),
    # x the stop requests left out of the last pack's riders: a signalled worker stops alone.
    Mutation(
        "stop_request_left_out_of_tail", At("extra_values"),
        "            values = [losses[d], counts[d], stops if d == 0 else None]\n",
        "            values = [losses[d], counts[d], None]\n",
        [T + "cluster/test_coordinated_stop.py"]),
    # x a skipped (non-finite) update: the next update's micro-batches planned
    # from the global step, which lags the input after a skip.
    Mutation(
        "accumulation_plan_follows_global_step", At("Trainer._step"),
        '            self.feed.next_update += 1\n',
        '            self.feed.next_update = self.global_step()\n',
        [T + "recipe/test_accumulation_combined.py::"
         "test_skipped_update_keeps_the_epochs_updates_in_place"]),
    # ... and a stop's drain computed from the lagging global step.
    Mutation(
        "accumulation_drain_from_global_step", At("Trainer.drain"),
        '        return self.feed.drain()\n',
        '        self.feed.next_update = self.global_step()\n        return self.feed.drain()\n',
        [T + "recipe/test_accumulation_combined.py::"
         "test_skipped_update_keeps_the_epochs_updates_in_place"]),
    # The scaling command checks only Params fields, so --forward_only passes unseen.
    Mutation(
        "scaling_misses_command_line_only_flags", At("main", module="scaling"),
        "_flag_checks(params_lib, _explicit_settings(flags.FLAGS))",
        "_flag_checks(params_lib, flags_lib.explicit_flags())",
        [T + "config/test_ignored_flags.py::"
         "test_scaling_command_refuses_a_command_line_only_flag_it_does_not_use"]),
    # tf_cnn_benchmarks' --device=GPU refused again (the setting case-sensitive).
    Mutation(
        "device_flag_case_sensitive", At("Devices.device"),
        'choices=DEVICES, case_sensitive=False,',
        'choices=DEVICES,',
        [T + "config/test_tfcnn_flags.py::test_every_tf_cnn_enum_value_parses_or_says_what_to_use",
         T + "config/test_tfcnn_flags.py::test_upper_case_device_reaches_params_as_the_lower_case_value"]),
    # The flag definition ignores the setting's case_sensitive.
    Mutation(
        "enum_flag_ignores_case_setting", At("define_flags", module="flags"),
        "case_sensitive=setting.case_sensitive", "case_sensitive=True",
        [T + "config/test_tfcnn_flags.py::test_every_tf_cnn_enum_value_parses_or_says_what_to_use"]),
    # --variable_update=horovod gets absl's bare choices, no migration line.
    Mutation(
        "tfcnn_enum_value_without_migration_line", At("flag_error_message"),
        '                reason += f"; {migration}"\n', "                pass\n",
        [T + "config/test_tfcnn_flags.py::test_every_tf_cnn_enum_value_parses_or_says_what_to_use"]),
    # Relaxed consistency's held sums left out of checkpoints: a resume applies zeros.
    Mutation(
        "relaxed_held_sums_not_checkpointed", At("Trainer.engine_variables"),
        "        found = dict(self.variables.engine_variables())\n",
        "        found = {}\n",
        [T + "engine/test_variable_consistency.py::"
         "test_relaxed_resume_applies_the_held_sums_like_an_uninterrupted_run"]),
    # ... restored into the first copy only.
    Mutation(
        "relaxed_held_sums_restored_to_one_copy", At("EngineState.sync_copies"),
        "        self.manager.sync_engine_copies()\n", "",
        [T + "engine/test_variable_consistency.py::"
         "test_relaxed_resume_applies_the_held_sums_like_an_uninterrupted_run"]),
    # --distortions on synthetic data accepted and silently ignored.
    Mutation(
        "distortions_on_synthetic_ignored", At("InputSettings.refuse_for"),
        '        if self.data_dir is None:\n'
        '            # Synthetic', '        if False:\n'
        '            # Synthetic',
        [T + "input/test_distortions_resize.py::test_preprocessing_flags_on_synthetic_data_are_errors"]),
    # --resize_method on cifar10 files accepted and silently ignored.
    Mutation(
        "resize_method_on_cifar10_ignored", At("InputSettings.refuse_for"),
        '            if self.resize_method is not None:\n'
        '                raise ParamsError(f"--resize_method={self.resize_method}: only applies to "',
        '            if False:\n'
        '                raise ParamsError(f"--resize_method={self.resize_method}: only applies to "',
        [T + "input/test_distortions_resize.py::"
         "test_resize_method_on_cifar10_files_is_an_error_and_the_cli_exits_2"]),
    # resnet50_v1.5 strides the first 1x1 conv like v1 (the one thing it does
    # not share with resnet50, whose sweeps stand in for it by default).
    Mutation(
        "resnet50_v1_5_strides_like_v1", At("_bottleneck"),
        "    y = _conv_bn(x, filters, 1, 1 if v1_5 else strides, data_format, f\"{name}_1\")\n"
        "    y = _conv_bn(y, filters, 3, strides if v1_5 else 1, data_format, f\"{name}_2\")\n",
        "    y = _conv_bn(x, filters, 1, strides, data_format, f\"{name}_1\")\n"
        "    y = _conv_bn(y, filters, 3, 1, data_format, f\"{name}_2\")\n",
        [T + "models/test_models.py::test_resnet50_v1_5_strides_the_3x3_conv"]),
    # The deeper CIFAR ResNets (full sweep only) built with resnet20's blocks:
    # their parameter counts must catch it.
    Mutation(
        "cifar_resnet_depth_capped", At("build_resnet_cifar"),
        "    blocks_per_stage = (depth - 2) // 6\n",
        "    blocks_per_stage = min((depth - 2) // 6, 3)\n",
        [T + "models/test_models.py::test_param_count_known"]),
    # The model catalog imports Keras: checking --model (Params) costs seconds again.
    Mutation(
        "catalog_imports_keras", Module("catalog"),
        "import dataclasses\nimport importlib\n",
        "import dataclasses\nimport importlib\n\nimport keras  # noqa: F401\n",
        [T + "models/test_catalog.py::test_catalog_and_params_import_no_keras"]),
    # A catalog row points at the wrong builder (resnet101 built as resnet50).
    Mutation(
        "catalog_row_wrong_builder_args", At("BUILTIN_MODELS"),
        '_resnet_imagenet(101)',
        '_resnet_imagenet(50)',
        [T + "models/test_catalog.py::test_every_built_in_model_has_the_spec_it_had_before"]),
    # A package name that is also a submodule's: importing models/vgg.py (as
    # building vgg11 does) rebinds it to the module.
    Mutation(
        "models_name_shared_with_a_submodule", At("_KERAS_BOUND"),
        '    "build_vgg": "vgg",\n',
        '    "build_vgg": "vgg", "vgg": "vgg",\n',
        [T + "models/test_catalog.py::test_keras_bound_names_resolve_lazily_and_name_no_module"]),
    # Workers sharing a host's cores each take all of them (the pool default
    # of one process): the multi-worker run oversubscribes the cores.
    Mutation(
        "colocated_workers_take_every_core", At("intra_op_threads"),
        "    sharing = workers_on_host * towers\n",
        "    sharing = towers\n",
        [T + "engine/test_runtime_flags.py::test_workers_sharing_a_hosts_cores_split_them_unless_told",
         T + "cluster/test_cluster_sources.py::"
         "test_srun_environment_two_tasks_equal_one_process_with_both_devices"]),
    # Loopback aliases seen as different hosts (127.0.0.1 vs localhost).
    Mutation(
        "loopback_aliases_are_other_hosts", At("_host"),
        '    return "localhost" if name.lower() in LOOPBACK else name.lower()',
        "    return name.lower()",
        [T + "engine/test_runtime_flags.py::"
         "test_workers_sharing_a_host_count_loopback_names_as_one_host"]),
    # The library door: cluster.setup joins without configuring the runtime
    # first, so the pools are fixed before the workers' share is set.
    Mutation(
        "cluster_setup_skips_runtime_threads", At("setup"),
        '    runtime.configure(layout.runtime)\n',
        '',
        [T + "engine/test_multiworker.py::test_two_workers_equal_one_process_with_four_devices"]),
    # Compact transfer sends the full-precision sum (no cast): with
    # accumulation the update would be float32-exact, not half precision.
    Mutation(
        "compact_transfer_not_cast", At("CompactTransfer.sum_flats"),
        "                compact.append(tf.cast(flat, self.dtype))\n",
        "                compact.append(flat)\n",
        [T + "recipe/test_accumulation_combined.py::"
         "test_compact_transfer_exchanges_the_updates_sum_in_half_precision"]),
    # Every model's collectives in one key space: a second Trainer of another
    # model in the same worker processes meets keys TensorFlow fixed for the first.
    Mutation(
        "collective_keys_one_space", At("key_space"),
        "            return space * KEY_SPACE_SIZE",
        "            return 0",
        [T + "engine/test_multiworker.py::"
         "test_a_second_model_in_the_same_worker_processes_trains_like_one_process",
         T + "engine/test_exchange_keys.py::test_one_layout_keeps_its_space"]),
    # The records cached whatever --datasets_use_caching says (the default
    # must read the files every epoch, as tf_cnn_benchmarks).
    Mutation(
        "caching_always_on", At("on_records"),
        "    if not (options.use_caching or options.repeat_cached_sample):\n        return records\n",
        "    options = options._replace(use_caching=True)\n",
        [T + "input/test_dataset_options.py::"
         "test_without_caching_the_second_epoch_reads_the_files_again"]),
    # A GPU machine with tensorflow-cpu (the [cpu] extra) looks like a laptop:
    # the driver's device node is not read, so the error names no cause.
    Mutation(
        "gpu_driver_node_not_read", At("gpu_hardware_present"),
        "    return any(os.path.exists(node) for node in GPU_DEVICE_NODES)",
        "    return False",
        [T + "engine/test_gpu_absence.py::test_the_driver_node_is_what_says_a_gpu_is_there",
         T + "engine/test_gpu_absence.py::"
         "test_asking_for_gpus_on_a_gpu_machine_with_tensorflow_cpu_says_to_install_the_gpu_extra"]),
    # The GPU proof on a GPU machine whose TensorFlow sees no GPU traces and
    # exits 0, as if the machine had none: a pass that proved nothing.
    Mutation(
        "gpu_proof_passes_an_unusable_gpu", File("bench/gpu_proof.py"),
        "    if not num_gpus and devices_lib.gpu_hardware_present():",
        "    if False:",
        [T + "engine/test_gpu_absence.py::"
         "test_the_gpu_proof_fails_on_a_gpu_machine_that_tensorflow_cannot_use"]),
    # --num_gpus=4 on one GPU: refused as "only 1 GPU(s) present" instead of
    # four logical GPUs.
    Mutation(
        "one_gpu_not_split", At("tower_devices"),
        "        if present == 1 and count > 1:",
        "        if False:",
        [T + "engine/test_logical_gpus.py::test_four_towers_on_one_gpu_are_four_logical_gpus"]),
    # The header's Devices line silent about logical GPUs splitting one GPU.
    Mutation(
        "header_hides_split_gpu", At("training_info"),
        '        ("Devices", static["Devices"] + devices_lib.describe_split(plan.topology)),',
        '        ("Devices", static["Devices"]),',
        [T + "engine/test_logical_gpus.py::test_the_header_says_the_towers_are_logical_gpus"]),
    # NCCL across logical GPUs of one GPU left to fail (or hang) in the step.
    Mutation(
        "nccl_on_logical_gpus_not_refused", At("Trainer._check_devices"),
        "        devices_lib.check_split_gpu_exchange(topology, layout.exchange)\n",
        "",
        [T + "engine/test_logical_gpus.py::"
         "test_nccl_across_logical_gpus_is_refused_before_anything_is_built"]),
    # The GPU proof's fp16 row compared with a CPU run (which the CPU refuses
    # for fp16 + NCHW) instead of the float32 run of its device.
    Mutation(
        "gpu_proof_fp16_against_cpu", File("bench/gpu_proof_rows.py"),
        'dict(REPLICATED, use_fp16=True, fp16_loss_scale=128.0), "f32", 2e-2),',
        'dict(REPLICATED, use_fp16=True, fp16_loss_scale=128.0), "cpu_f32", 2e-2),',
        [T + "package/test_gpu_proof.py::"
         "test_half_precision_is_compared_with_the_float32_run_on_its_own_device"]),
    # The proof's 2 workers each given all 4 towers (another global batch).
    Mutation(
        "gpu_proof_workers_given_all_towers", File("bench/gpu_proof_rows.py"),
        '                       "towers", 2, 1, dict(variable_update="collective_all_reduce",',
        '                       "towers", 4, 1, dict(variable_update="collective_all_reduce",',
        [T + "package/test_gpu_proof.py::test_two_workers_are_compared_with_the_four_tower_run"]),
    # A row without images/sec formats None as a number (--timing_steps=0).
    Mutation(
        "gpu_proof_none_speed_formatted", File("bench/gpu_proof.py"),
        '    return "-" if value is None else format(value, form)',
        '    return format(value, form)',
        [T + "package/test_gpu_proof.py::test_no_timed_steps_leaves_the_speeds_empty"]),
    # The placement check leaves soft placement on: a CPU fallback passes.
    Mutation(
        "gpu_proof_soft_placement_left_on", File("bench/gpu_proof_rows.py"),
        "    soft = tf.config.get_soft_device_placement()\n"
        "    tf.config.set_soft_device_placement(False)\n    context",
        "    soft = tf.config.get_soft_device_placement()\n"
        "    tf.config.set_soft_device_placement(True)\n    context",
        [T + "package/test_gpu_proof.py::"
         "test_an_op_that_falls_back_to_the_cpu_fails_the_placement_check"]),
    # The 2 worker processes on one GPU each take 0.9 of it (out of memory).
    Mutation(
        "gpu_proof_workers_take_the_whole_gpu", File("bench/gpu_proof_rows.py"),
        "logical_gpu_memory_mb(towers * share, ",
        "logical_gpu_memory_mb(towers, ",
        [T + "package/test_gpu_proof.py::"
         "test_on_a_gpu_each_process_splits_its_share_of_the_gpu_memory"]),
    # The proof waits on a group's process with no deadline: a hung
    # collective holds it (and its table) forever.
    Mutation(
        "gpu_proof_waits_forever", File("bench/gpu_proof.py"),
        "                line = lines.get(timeout=max(0.1, deadline - time.monotonic()))",
        "                line = lines.get()",
        [T + "package/test_gpu_proof.py::"
         "test_a_group_whose_process_hangs_fails_its_rows_at_its_time"]),
    # One-tower rows on the GPU default, nccl: an NcclAllReduce of one member,
    # which an install without NCCL cannot run; the CPU reference asking psgpu.
    Mutation(
        "gpu_proof_one_tower_on_nccl", File("bench/gpu_proof_rows.py"),
        'REPLICATED = dict(variable_update="replicated", all_reduce_spec="psgpu")',
        'REPLICATED = dict(variable_update="replicated")',
        [T + "package/test_gpu_proof.py::"
         "test_on_a_gpu_the_cpu_reference_sums_on_the_cpu_and_one_tower_avoids_nccl"]),
    Mutation(
        "gpu_proof_cpu_reference_keeps_gpu_sums", File("bench/gpu_proof_rows.py"),
        '    if device == "cpu":  # a stand-in, or the CPU reference on a GPU machine',
        '    if args.stand_in:',
        [T + "package/test_gpu_proof.py::"
         "test_on_a_gpu_the_cpu_reference_sums_on_the_cpu_and_one_tower_avoids_nccl"]),
    # Staging's example count not checked against 1.5 epochs in order.
    Mutation(
        "gpu_proof_ids_expect_one_epoch", File("bench/gpu_proof_rows.py"),
        "== [2] * half + [1] * half",
        "== [1] * half + [1] * half",
        [T + "package/test_gpu_proof.py::"
         "test_several_towers_run_on_one_device_split_and_equal_one_tower"]),
    # The no-GPU error without its cause (CPU-only build, no driver).
    Mutation(
        "no_gpu_error_names_no_cause", At("tower_devices"),
        '            note = "" if present else no_gpu_note()',
        '            note = ""',
        [T + "engine/test_gpu_absence.py::test_the_cli_says_why_no_gpu_is_there"]),
    # Two model layouts whose hashes meet share a key space (1 in 1000): the
    # second trainer in the process meets keys TensorFlow fixed for the first.
    Mutation(
        "key_spaces_collide", At("key_space"),
        "        space = (space + 1) % KEY_SPACES\n",
        "        return space * KEY_SPACE_SIZE\n",
        [T + "engine/test_exchange_keys.py::"
         "test_two_layouts_whose_hashes_meet_get_different_spaces"]),
    # A run refused in setup (here: --use_fp16 on a CPU) creates --train_dir first.
    Mutation(
        "refused_run_creates_train_dir", At("main", module="train"),
        "        writable.check_run(common.outputs_of(params), training=not params.eval)\n",
        "        writable.check_run(common.outputs_of(params), training=not params.eval)\n"
        "        if params.train_dir:\n"
        "            __import__('os').makedirs(params.train_dir, exist_ok=True)\n",
        [T + "commands/test_tfcnn_readme_commands.py::"
         "test_the_eight_gpu_command_on_cpu_is_refused_before_any_step"]),
    # tf_cnn_benchmarks' "unset" defaults spelled out are refused or taken as values.
    Mutation(
        "tfcnn_unset_defaults_taken_as_values", At("params_from_flags"),
        "    tfcnn_checks.forget_unset_spellings(FLAGS)  # --batch_size=0 etc.: as if not given\n",
        "",
        [T + "config/test_tfcnn_unset_defaults.py::test_a_spelled_out_unset_default_is_as_if_not_given",
         T + "config/test_tfcnn_unset_defaults.py::"
         "test_a_tf_cnn_line_spelling_out_its_defaults_runs_like_one_without_them"]),
    # --model=alexnet --data_name=cifar10 builds the ImageNet AlexNet at 227x227.
    Mutation(
        "cifar10_alexnet_not_mapped", At("CIFAR10_MODELS"),
        'CIFAR10_MODELS = {"alexnet": "alexnet_cifar"}', "CIFAR10_MODELS = {}",
        [T + "config/test_tfcnn_unset_defaults.py::"
         "test_alexnet_on_cifar10_is_the_cifar10_alexnet_as_in_tf_cnn_benchmarks",
         T + "config/test_tfcnn_unset_defaults.py::test_the_cli_builds_and_names_the_cifar10_alexnet"]),
    # --save_summaries_steps=0 (no summaries) with --summary_verbosity: summaries
    # asked for and none written, silently.
    Mutation(
        "summaries_off_and_on_accepted", At("Observe.refuse"),
        "    if p.save_summaries_steps == 0 and p.summary_verbosity:",
        "    if False:",
        [T + "config/test_tfcnn_unset_defaults.py::"
         "test_save_summaries_steps_0_turns_summaries_off_and_conflicts_with_asking_for_them"]),
    # --use_fp16 builds the registry's models in float32 (the loss scale stays).
    Mutation(
        "fp16_policy_is_float32", At("Precision.keras_policy"),
        'return f"mixed_{self.half}" if self.half else None',
        'return f"mixed_{self.half}" if self.half == "bfloat16" else None',
        [T + "recipe/test_precision.py::test_registry_models_are_built_under_the_policy_and_"
         "the_global_policy_is_restored[use_fp16-mixed_float16]"]),
    # A fixed --fp16_loss_scale (no auto scaling) replaced by the default 128.
    Mutation(
        "fixed_loss_scale_ignored", At("LossScale.from_plan"),
        "initial = precision.fp16_loss_scale or (",
        "initial = (precision.fp16_loss_scale if auto else None) or (",
        [T + "recipe/test_precision.py::"
         "test_a_fixed_loss_scale_is_the_one_given_and_reaches_the_gradients"]),
    # --resize_method honoured in eval only: training always resizes bilinearly.
    Mutation(
        "resize_method_ignored_in_training", At("imagenet_train"),
        "        image = tf.io.decode_and_crop_jpeg(encoded, window, channels=3)\n"
        "        image = _resize(image, image_size, resize_method, seed)",
        "        image = tf.io.decode_and_crop_jpeg(encoded, window, channels=3)\n"
        '        image = _resize(image, image_size, "bilinear", seed)',
        [T + "input/test_distortions_resize.py::"
         "test_resize_method_nearest_in_training_copies_pixels_where_bilinear_mixes"]),
    # --gpu_indices refused with --eval/--forward_only, which run towers too.
    Mutation(
        "gpu_indices_training_only", At("Devices.gpu_indices"),
        '        scaling=NOT_USED,\n',
        '        training_only=True, scaling=NOT_USED,\n',
        [T + "engine/test_runtime_flags.py::"
         "test_gpu_indices_choose_the_gpus_of_eval_and_forward_only_too"]),
    # Trainer.save without the engine variables (global step, loss scale).
    Mutation(
        "library_save_drops_the_loss_scale", At("Trainer.save"),
        "        return ckpt_lib.save_portable(self.model, self.variables, path,\n"
        "                                      engine_variables=self.engine_variables())",
        "        return ckpt_lib.save_portable(self.model, self.variables, path)",
        [T + "state/test_trainer_save_restore.py::"
         "test_save_carries_the_dynamic_loss_scale_and_its_count"]),
    # A state holding inf is written like any other.
    Mutation(
        "non_finite_state_saved", At("Checkpointer.save"),
        "        bad = self.non_finite_variables()\n", "        bad = []\n",
        [T + "state/test_trainer_save_restore.py::"
         "test_a_state_with_a_non_finite_variable_is_never_saved"]),
    # export --include_preprocessing puts cifar10's standardization in front of
    # an imagenet model.
    Mutation(
        "imagenet_export_preprocessing_allowed", At("with_eval_preprocessing"),
        '    if data_name != "cifar10":\n        raise ParamsError(f"--include_preprocessing:',
        '    if False:\n        raise ParamsError(f"--include_preprocessing:',
        [T + "state/test_export_preprocessing.py::"
         "test_include_preprocessing_on_an_imagenet_run_is_refused_and_writes_nothing"]),
    # export's --model check without a model in the record (an operand dropped).
    Mutation(
        "export_model_check_ignores_the_record", At("export"),
        "    if model_name and info.get(\"model\") and model_name != info[\"model\"]:",
        "    if model_name and model_name != info.get(\"model\"):",
        [T + "state/test_refusal_operands.py"]),
    # import towertrain leaves oneDNN to TensorFlow's CPU check (NCHW fails on
    # CPUs where TensorFlow keeps it off).
    Mutation(
        "onednn_not_set_on_import", Module("towertrain"),
        'os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")', "pass",
        [T + "package/test_public_api.py::"
         "test_import_turns_onednn_on_before_tensorflow_unless_the_user_chose"]),
    # A user's callbacks run before the built-in ones.
    Mutation(
        "user_callbacks_first", At("Trainer.train"),
        "built + list(callbacks), self.total_steps, write)",
        "list(callbacks) + built, self.total_steps, write)",
        [T + "engine/test_step_results.py::test_a_users_callbacks_run_after_the_built_in_ones"]),
    # independent: eval and the Keras model take the last tower's copy.
    Mutation(
        "independent_primary_is_last_copy", At("ReplicatedManager.primary_variables"),
        "        return self._trainable[0], self._non_trainable[0]",
        "        return self._trainable[-1], self._non_trainable[-1]",
        [T + "state/test_eval_checked.py::"
         "test_independent_mode_evaluates_tower_0s_copy_and_says_so"]),
    # No staging fence after an eval step: --stop_at_top_1_accuracy stops (and
    # saves) one staged batch past the eval that stopped it.
    Mutation(
        "no_fence_after_eval", At("PeriodicEval._fence_after"),
        "            self.add_fence(following)", "            pass",
        [T + "callbacks/test_eval_flags.py::"
         "test_stop_at_top_1_with_staged_input_stops_at_that_eval_not_a_batch_later"]),
    # The step's collectives timed again: one sleeping TensorFlow thread each
    # for the whole timeout, and a fast model runs out of threads.
    Mutation(
        "step_collectives_timed", At("CollectiveManager.create"),
        "        self.collectives.timeout = 0\n", "",
        [T + "cluster/test_peer_watch.py::"
         "test_a_fast_model_keeps_its_thread_count_with_the_default_timeout"]),
    # No peer watch: with untimed step collectives a dead peer hangs the others.
    Mutation(
        "peer_watch_not_started", At("CollectiveManager.create"),
        "            peer_watch.start(self.cluster, self.collectives.timeout)\n", "",
        [T + "cluster/test_peer_watch.py::test_a_frozen_peer_stops_the_others_naming_it",
         T + "engine/test_multiworker.py::test_killed_worker_stops_the_other_and_restart_resumes"]),
    # The watch sees the dead peer and does nothing.
    Mutation(
        "peer_watch_never_aborts", At("PeerWatch._abort"),
        "        private_api.eager_context().abort_collective_ops(tf.errors.UNAVAILABLE, self.failure)",
        "        pass",
        [T + "cluster/test_peer_watch.py::"
         "test_a_peer_that_stays_unreachable_aborts_the_collectives_naming_it"]),
    # Helper-3's cluster claims (launcher flag and signals, Slurm GPUs, chief only).
    Mutation(
        "launcher_adds_no_variable_update", At("Workers.__init__"),
        'cluster.append("--variable_update=collective_all_reduce")', "pass",
        [T + "cluster/test_launch.py::test_the_launcher_adds_collective_all_reduce_unless_given"]),
    Mutation(
        "launcher_does_not_forward_signals", At("main.forward"),
        'state["workers"].signal(signum)', "pass",
        [T + "cluster/test_launch.py::"
         "test_ctrl_c_on_the_launcher_is_the_coordinated_stop_of_every_worker"]),
    Mutation(
        "launcher_signals_only_task_0", At("Workers.signal"),
        "    def signal(self, signum):\n        for proc in self.procs:",
        "    def signal(self, signum):\n        for proc in self.procs[:1]:",
        [T + "cluster/test_launch.py::"
         "test_ctrl_c_on_the_launcher_is_the_coordinated_stop_of_every_worker"]),
    Mutation(
        "slurm_gpus_not_assigned", At("share"),
        "    first = local_rank * num_gpus\n",
        "    first = 0\n",
        [T + "cluster/test_cluster_sources.py::"
         "test_slurm_with_device_gpu_gives_each_task_num_gpus_of_its_node"]),
    # TF_CONFIG or a Slurm step without collective_all_reduce: each task trains alone.
    Mutation(
        "tf_config_without_collective_trains_alone", At("_resolve"),
        "    _check_exchange(params, source, environ)\n    return cluster", "    return cluster",
        [T + "cluster/test_cluster_sources.py::"
         "test_every_cluster_source_needs_collective_all_reduce_and_a_bad_one_is_never_ignored"]),
    # A malformed TF_CONFIG ignored unless collective_all_reduce is given.
    Mutation(
        "malformed_tf_config_ignored", At("_present"),
        '    if environ.get("TF_CONFIG"):\n        found.append("tf_config")',
        '    if environ.get("TF_CONFIG") and params.variable_update == "collective_all_reduce":\n'
        '        found.append("tf_config")',
        [T + "cluster/test_cluster_sources.py::"
         "test_every_cluster_source_needs_collective_all_reduce_and_a_bad_one_is_never_ignored"]),
    # A port in use: the first op's 'Could not start gRPC server' traceback.
    Mutation(
        "port_in_use_traceback", At("join"),
        "        except tf.errors.OpError as err:", "        except ZeroDivisionError as err:",
        [T + "cluster/test_cluster_sources.py::test_a_port_in_use_is_one_line_naming_it"]),
    Mutation(
        "every_worker_is_the_chief", At("default_callbacks"),
        "    if not plan.topology.is_chief:\n", "    if False:\n",
        [T + "cluster/test_chief_writes.py::"
         "test_only_the_chief_prints_the_output_and_writes_the_train_dir"]),
    Mutation(
        "non_chief_prints_the_output", At("_worker_callbacks"),
        "StepPrinter(out, plan.steps.warmup, lambda *_: None)",
        "StepPrinter(out, plan.steps.warmup, write)",
        [T + "cluster/test_chief_writes.py::"
         "test_only_the_chief_prints_the_output_and_writes_the_train_dir"]),
    Mutation(
        "workers_resume_from_different_checkpoints", At("check_rows"),
        "    if len(set(rows)) == 1:\n", "    if True:\n",
        [T + "cluster/test_chief_writes.py::"
         "test_only_the_chief_prints_the_output_and_writes_the_train_dir"]),
    # The run plan (towertrain/plan): one fact derived once, for every part.
    # The eval schedule counts an epoch's global batches, not its updates.
    Mutation(
        "eval_schedule_counts_batches_under_accumulation", At("plan_steps"),
        "    schedule = eval_schedule.for_params(params, warmup + timed,\n"
        "                                        accumulation.updates_per_epoch)",
        "    schedule = eval_schedule.for_params(params, warmup + timed, batches_per_epoch)",
        [T + "plan/test_plan.py::"
         "test_eval_every_epoch_under_accumulation_runs_after_each_epochs_last_update",
         T + "plan/test_plan.py::test_eval_at_specified_epochs_under_accumulation_counts_updates"]),
    # Every caller resolves the cluster again (the environment read 4 times a run).
    Mutation(
        "cluster_resolved_at_every_call", At("resolve", module="cluster"),
        "    if key not in _RESOLVED:\n", "    if True:\n",
        [T + "package/test_run_plan_structure.py::"
         "test_a_cli_run_resolves_its_cluster_and_configures_its_runtime_once"]),
    # The Trainer applies the runtime settings again after the CLI's setup did.
    Mutation(
        "runtime_configured_twice", At("configure"),
        '    if gpus is None and _APPLIED.get("runtime") == runtime:\n        return\n', "",
        [T + "package/test_run_plan_structure.py::"
         "test_a_cli_run_resolves_its_cluster_and_configures_its_runtime_once"]),
    # A second place lists the GPUs.
    Mutation(
        "gpu_list_read_in_devices", At("num_physical_gpus"),
        "    return len(machine.physical_gpus())",
        '    return len(tf.config.list_physical_devices("GPU"))',
        [T + "package/test_run_plan_structure.py::test_the_gpu_list_is_read_in_one_place"]),
    # The plan imports TensorFlow when it loads.
    Mutation(
        "plan_imports_tensorflow", Module("steps"),
        "import math\n", "import math\n\nimport tensorflow  # noqa: F401\n",
        [T + "package/test_run_plan_structure.py::"
         "test_the_plan_and_config_import_no_tensorflow_at_module_level",
         T + "plan/test_plan_without_tensorflow.py"]),
    # An engine part holds the Params again.
    Mutation(
        "variable_manager_holds_params", At("VariableManager.__init__"),
        "        self.options = exchange  #", "        self.params = exchange  #",
        [T + "package/test_run_plan_structure.py::"
         "test_params_is_read_only_where_the_flags_are_decided"]),
    # --- The review's named misses. ---
    # --max_restarts=R counted one too many: R=0 restarts once.
    Mutation(
        "launch_restart_limit_off_by_one", At("main", module="launch"),
        "restarts >= options.max_restarts", "restarts > options.max_restarts",
        [T + "cluster/test_launch_restarts.py"]),
    # Workers a forwarded signal stopped are restarted like failed ones.
    Mutation(
        "launch_restarts_after_a_signal", At("main", module="launch"),
        'if state["signals"] or restarts >= options.max_restarts:',
        "if restarts >= options.max_restarts:",
        [T + "cluster/test_launch_restarts.py::test_workers_a_signal_stopped_are_not_restarted"]),
    # --datasets_* accepted with --data_dir whatever --input is.
    Mutation(
        "datasets_flags_with_any_input", At("InputSettings.refuse_given"),
        'if given and (p.data_dir is None or p.input != "dataset"):',
        "if given and p.data_dir is None:",
        [T + "config/test_refusal_table.py"]),
    # The --batch_group_size-on-synthetic-data check disabled by a misspelt key.
    Mutation(
        "batch_group_size_check_misspelt", At("InputSettings.refuse_given"),
        'if "batch_group_size" in explicit and p.data_dir is None:',
        'if "batch_group_sizes" in explicit and p.data_dir is None:',
        [T + "config/test_refusal_table.py"]),
    # --datasets_prefetch_buffer_size refused alone, accepted with --nodatasets_use_prefetch.
    Mutation(
        "prefetch_buffer_conflict_inverted", At("InputSettings.refuse_given"),
        'in explicit and not p.datasets_use_prefetch:', 'in explicit and p.datasets_use_prefetch:',
        [T + "config/test_refusal_table.py"]),
    # A GPU of exactly the minimum capability called emulated.
    Mutation(
        "gpu_capability_threshold_exclusive", At("gpu_support"),
        "tuple(capability) < wanted", "tuple(capability) <= wanted",
        [T + "recipe/test_gpu_capability.py"]),
    # bfloat16 taken as native from Volta (7.0) instead of Ampere (8.0).
    Mutation(
        "bf16_native_from_volta", At("GPU_MINIMUM"),
        '"bfloat16": (8, 0)}', '"bfloat16": (7, 0)}',
        [T + "recipe/test_gpu_capability.py::test_each_precision_is_native_from_its_capability_on"]),
    # export --data_format defaults to NHWC instead of the training run's layout.
    Mutation(
        "export_data_format_defaults_to_nhwc", At("export"),
        'data_format or info.get("data_format", "NHWC"),\n                                       image_size)',
        'data_format or "NHWC",\n                                       image_size)',
        [T + "state/test_export_options.py::test_data_format_defaults_to_the_training_run_s"]),
    # export --include_preprocessing of an NCHW model swaps height and width.
    Mutation(
        "export_preprocessing_transposed_wrong", At("with_eval_preprocessing"),
        "x = ops.transpose(x, (0, 3, 1, 2))", "x = ops.transpose(x, (0, 3, 2, 1))",
        [T + "state/test_export_options.py::"
         "test_include_preprocessing_of_an_nchw_run_takes_raw_nhwc_pixels"]),
    # An existing directory accepted as export --output.
    Mutation(
        "export_output_directory_unchecked", At("problem"),
        '        if is_file and os.path.isdir(path):\n            return "is a directory"\n', "",
        [T + "state/test_export_options.py::test_output_paths_are_checked_before_the_work"]),
    # Any existing --output (a file to replace) called a directory.
    Mutation(
        "export_existing_output_file_called_a_directory", At("problem"),
        "if is_file and os.path.isdir(path):", "if is_file and os.path.exists(path):",
        [T + "state/test_export_options.py::test_output_paths_are_checked_before_the_work"]),
    # An existing file accepted as a directory to write (--saved_model).
    Mutation(
        "export_saved_model_file_unchecked", At("problem"),
        "        if not is_file and not os.path.isdir(path):\n"
        '            return "is a file, not a directory"\n', "",
        [T + "state/test_export_options.py::test_output_paths_are_checked_before_the_work"]),
    # The readers get their default seed, not --tf_random_seed.
    Mutation(
        "reader_seed_dropped", At("_reader"),
        "seed=input_plan.seed, data_format=data_format,", "data_format=data_format,",
        [T + "input/test_reader_seed.py"]),
    # A registered model's weight_decay_filter ignored for the default rule.
    Mutation(
        "weight_decay_filter_ignored_in_training", At("Trainer._prepare_model"),
        "None if user_model else layout.model)", "None)",
        [T + "models/test_weight_decay_filter_training.py"]),
    # A resume with another optimizer is not checked.
    Mutation(
        "resume_state_settings_unchecked", At("_resume_chief"),
        "        contract.check_state_settings(record, state, where)\n", "",
        [T + "state/test_resume_settings.py::"
         "test_resume_with_another_optimizer_is_refused_and_the_checkpoint_resumes_exactly"]),
    # The optimizer's options are not recorded.
    Mutation(
        "resume_optimizer_options_unrecorded", At("recorded_values", module="config.settings"),
        "            if value_of(mode) not in allowed or (mode in names and mode not in values):\n",
        "            if True:\n",
        [T + "state/test_resume_settings.py::test_each_setting_that_shapes_the_saved_state_is_refused"]),
    # A float32 run resumed with --use_bf16: bf16 not in the recorded precision.
    Mutation(
        "resume_bf16_unrecorded", At("Precision", module="recipe.settings"),
        "        False, \"bfloat16 compute, float32 variables.\",\n        recorded=ALWAYS)\n",
        "        False, \"bfloat16 compute, float32 variables.\")\n",
        [T + "state/test_record_fields.py",
         T + "state/test_resume_settings.py::test_a_float32_run_resumed_with_use_bf16_is_refused"]),
    # A changed step count is not reported at a resume.
    Mutation(
        "resume_changes_not_in_header", At("Resumed.header_info"),
        "            info.extend(self.resume_changes)\n", "",
        [T + "state/test_resume_settings.py::"
         "test_resume_with_another_optimizer_is_refused_and_the_checkpoint_resumes_exactly"]),
    # A failed save is not caught (a traceback).
    Mutation(
        "save_failure_uncaught", At("Checkpointer.save"),
        "        except (tf.errors.OpError, OSError) as err:  # a full disk",
        "        except ValueError as err:  # a full disk",
        [T + "state/test_full_disk.py"]),
    # A failed save's temporary files are left behind.
    Mutation(
        "save_failure_leaves_temp", At("Checkpointer.save"),
        "            self._remove_partial(os.path.join(self.train_dir, f\"ckpt-{step}\"))\n", "",
        [T + "state/test_full_disk.py"]),
    # A set-aside (or a lost state file's rebuild) writes absolute paths: a
    # copied train_dir resumes from the original's checkpoint (and its
    # max_to_keep deletes the original's files).
    Mutation(
        "set_aside_state_absolute_paths", At("rebuild_state_file"),
        "        names = [os.path.basename(path) for path in found]\n",
        "        names = list(found)\n",
        [T + "callbacks/test_divergence.py::"
         "test_resume_after_divergence_with_a_sane_learning_rate_trains"]),
    # A `checkpoint` state file naming deleted files: TensorFlow's reader error.
    Mutation(
        "leftover_state_file_unexplained", At("check_matches"),
        '    if not tf.io.gfile.exists(path + ".index"):\n', "    if False:\n",
        [T + "state/test_state_leftovers.py"]),
    # The run record merged into an earlier run's: its final mark and settings stay.
    Mutation(
        "run_record_merged_with_leftover", At("write"),
        "            json.dump(record, f, indent=1, sort_keys=True)",
        "            json.dump({**read(train_dir), **record}, f, indent=1, sort_keys=True)",
        [T + "state/test_state_leftovers.py"]),
    # A record's settings checked with no checkpoint to resume (an earlier
    # run's leftover record refuses a fresh run).
    Mutation(
        "run_record_checked_without_checkpoint", At("_resume_chief"),
        "    if resuming_from:  # a resume",
        "    if True:  # a resume",
        [T + "state/test_state_leftovers.py"]),
    # The topology header ignores a changed number of devices per worker.
    Mutation(
        "topology_devices_not_compared", At("RecordedTopology.header_info"),
        "        if self.saved is None or self.saved == self.current:",
        "        if self.saved is None or self.saved[:2] == self.current[:2]:",
        [T + "state/test_record_fields.py"]),
    # The free space is not checked before the first step.
    Mutation(
        "free_space_unchecked", At("resume"),
        "    checkpointer.check_free_space()  # a disk that cannot hold one: refused now\n", "",
        [T + "state/test_full_disk.py::"
         "test_a_full_disk_mid_run_keeps_the_last_checkpoint_and_resumes_exactly"]),
    # The free space asked leaves out the optimizer slots.
    Mutation(
        "checkpoint_estimate_without_slots", At("Checkpointer.bytes_needed"),
        "        tensors += [slot for slots in self.state.slots.values() for slot in slots.values()]\n",
        "",
        [T + "state/test_checkpoint_estimate.py"]),
    # The free space asked counts the tensors' bytes only (no index entries or
    # object graph): resnet20 asked 2,200,168 bytes and wrote 2,221,984.
    Mutation(
        "checkpoint_estimate_tensors_only", At("Checkpointer.bytes_needed"),
        "        return data + PER_TENSOR_BYTES * len(tensors) + FILE_OVERHEAD_BYTES",
        "        return data + FILE_OVERHEAD_BYTES",
        [T + "state/test_checkpoint_estimate.py"]),
    # Every step draws the same dropout masks (the step left out).
    Mutation(
        "draws_ignore_step", At("Towers._tower_values"),
        "        key = tower.draw_key(self.seed, step, slot)",
        "        key = tower.draw_key(self.seed, 0, slot)",
        [T + "engine/test_dropout_towers.py::"
         "test_each_tower_draws_what_the_fold_in_of_seed_step_and_tower_gives"]),
    # Towers draw by their local index (2 x 1 draws other masks than 1 x 2).
    Mutation(
        "draws_by_local_tower", At("Towers._tower_values"),
        "                + self.tower_indices[i])", "                + i)",
        [T + "cluster/test_synthetic_topology.py"]),
    # The micro-batch left out of the slot (accumulation draws one mask twice).
    Mutation(
        "draws_ignore_micro_batch", At("Towers._tower_values"),
        "        slot = (tf.cast(micro_batch, tf.int64) * self.cluster_towers",
        "        slot = (tf.cast(micro_batch, tf.int64) * 0",
        [T + "engine/test_random_draws.py::"
         "test_accumulated_micro_batches_with_dropout_equal_one_step_on_them_concatenated"]),
    # The slots of the draws count one worker's towers: with accumulation,
    # worker 0's second micro-batch draws worker 1's first masks.
    Mutation(
        "draws_slots_one_worker", At("Trainer._make_step"),
        "            cluster_towers=plan.topology.num_towers * plan.topology.num_workers,",
        "            cluster_towers=plan.topology.num_towers,",
        [T + "engine/test_multiworker.py::"
         "test_two_workers_accumulating_with_dropout_equal_one_process_with_four_devices"]),
    # Keras' carried generator state drawn from again (lost at a worker's stop).
    Mutation(
        "seed_states_carried", At("Towers._tower_values"),
        "        if not self.seed_states:\n            return trainable, non_trainable",
        "        if True:\n            return trainable, non_trainable",
        [T + "engine/test_dropout_towers.py::"
         "test_each_tower_draws_what_the_fold_in_of_seed_step_and_tower_gives"]),
    # Synthetic data by local device (2 x 1 trains on other data than 1 x 2).
    Mutation(
        "synthetic_by_local_tower", At("SyntheticInput.create"),
        "        towers = self.tower_indices or range(len(devices))",
        "        towers = range(len(devices))",
        [T + "cluster/test_synthetic_topology.py"]),
    # A resumed run's header counts the plan's steps from step 0.
    Mutation(
        "resumed_header_counts_plan", At("with_resumed_counts"),
        "    if start_step <= 0 or start_step >= total_steps:",
        "    if True:",
        [T + "state/test_resume_epochs.py::"
         "test_kill_9_with_staging_on_an_epoch_run_then_resume_is_exact"]),
    # The time after the update counted as input wait without a staged put.
    Mutation(
        "wait_counts_time_after_update", At("input_wait"),
        "    if not staged_put:\n        return wait", "",
        [T + "input/test_input_wait.py::test_unstaged_synthetic_input_reports_no_wait"]),
    # The header keeps quiet about a user's own random layer or input.
    Mutation(
        "randomness_line_missing", At("training_info"),
        "    if unseeded:\n", "    if False:\n",
        [T + "engine/test_random_draws.py::"
         "test_the_header_says_a_run_is_exact_only_on_its_topology_where_it_cannot_be_more"]),
    # No lock on the train_dir (two runs save into one).
    Mutation(
        "train_dir_unlocked", At("TrainDirLock.__init__"),
        "            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)\n",
        "            pass\n",
        [T + "state/test_train_dir_lock.py", T + "commands/test_newcomer_errors.py"]),
    # The lock is not released at the run's end (a second
    # run in the same process, the same command again, is refused).
    Mutation(
        "train_dir_lock_kept", At("Resumed.release"),
        "        if self.lock is not None:\n            self.lock.release()\n",
        "        pass\n",
        [T + "state/test_train_dir_lock.py::test_the_lock_is_freed_when_a_run_ends_or_is_refused"]),
    # A refused resume keeps the lock it took.
    Mutation(
        "train_dir_lock_kept_on_refusal", At("resume"),
        "    except BaseException:\n        lock.release()\n        raise\n",
        "    except BaseException:\n        raise\n",
        [T + "state/test_train_dir_lock.py::test_the_lock_is_freed_when_a_run_ends_or_is_refused"]),
    # The lock file not truncated: a shorter pid after a longer one's leftover
    # digits names a process that does not exist.
    Mutation(
        "train_dir_lock_not_truncated", At("TrainDirLock.__init__"),
        "        os.ftruncate(self._fd, 0)", "        os.lseek(self._fd, 0, os.SEEK_SET)",
        [T + "state/test_state_leftovers.py"]),
    # --- The patterns closed (boundaries, lists, device branches). ---
    # Boundaries: each comparison against a user's number moved by one.
    Mutation(
        "eval_every_n_steps_boundary", At("_validate_eval_against_training"),
        "every > p.num_warmup_batches + p.resolved_num_batches",
        "every >= p.num_warmup_batches + p.resolved_num_batches",
        [T + "config/test_refusal_table.py"]),
    Mutation(
        "trace_step_warmup_boundary", At("Observe.refuse"),
        "if p.trace_step <= p.num_warmup_batches:", "if p.trace_step < p.num_warmup_batches:",
        [T + "config/test_refusal_table.py"]),
    Mutation(
        "slurm_port_base_boundary", At("ClusterSettings.refuse"),
        "if not 0 < p.slurm_port_base < 65536:", "if not 0 < p.slurm_port_base <= 65536:",
        [T + "config/test_refusal_table.py"]),
    Mutation(
        "gradient_repacking_boundary", At("validate_exchange"),
        "if not 0 <= packs <= MAX_PACKS:", "if not 0 <= packs < MAX_PACKS:",
        [T + "config/test_refusal_table.py"]),
    Mutation(
        "task_index_boundary", At("validate_cluster"),
        "if p.task_index >= len(hosts):", "if p.task_index > len(hosts):",
        [T + "config/test_refusal_table.py"]),
    Mutation(
        "decay_steps_boundary", At("learning_rate", module="schedule"),
        "if decay_steps < 1:", "if decay_steps <= 1:",
        [T + "config/test_refusal_table.py"]),
    Mutation(
        "minimum_learning_rate_boundary", At("learning_rate", module="schedule"),
        "schedule.minimum > schedule.initial_value", "schedule.minimum >= schedule.initial_value",
        [T + "config/test_refusal_table.py"]),
    # Lists: one member dropped.
    Mutation(
        "forward_only_writer_dropped", At("Evaluation.eval_dir"),
        '        forward_only=False)', '        )',
        [T + "config/test_refusal_table.py"]),
    # `~` in a path flag: ./~/run created (the library's Params, every command's parser).
    Mutation(
        "params_keep_the_tilde", At("Params.__post_init__"),
        "            object.__setattr__(self, name, settings.expand_path(getattr(self, name)))\n",
        "            pass\n",
        [T + "commands/test_home_paths.py::test_every_path_flag_of_every_command_expands_the_home"]),
    Mutation(
        "export_output_keeps_the_tilde", At("flags_parser.parse"),
        "        expand_paths(flags.FLAGS)\n", "",
        [T + "commands/test_home_paths.py::test_a_tilde_in_train_dir_and_export_output_is_the_home"]),
    Mutation(
        "writable_train_dir_unchecked", At("run_paths"),
        '        paths.append(("train_dir", outputs.train_dir, False))\n', "",
        [T + "state/test_writable_every_path.py"]),
    # --summary_dir written by --profile_steps alone, unchecked.
    Mutation(
        "writable_summary_dir_ignores_profile_steps", At("Observe.writes_logdir"),
        "        return bool(self.summary_verbosity or self.profile_steps)",
        "        return bool(self.summary_verbosity)",
        [T + "state/test_writable_every_path.py", T + "state/test_refusal_operands.py"]),
    # --summary_dir with --profile_steps alone refused ("writes nothing").
    Mutation(
        "summary_dir_for_a_profile_refused", At("Observe.refuse"),
        "    if p.summary_dir and not p.summary_verbosity and p.profile_steps is None:",
        "    if p.summary_dir and not p.summary_verbosity:",
        [T + "state/test_writable_every_path.py"]),
    # An operand of a refusal dropped: --eval without --data_dir refused for a
    # run that was trained on synthetic data too.
    Mutation(
        "eval_input_refused_without_a_data_dir_record", At("check_eval_input"),
        "    if trained_on and not data_dir:", "    if not data_dir:",
        [T + "state/test_refusal_operands.py"]),
    # Device branches, run with an injected machine description.
    Mutation(
        "gpu_intra_threads_not_one", At("intra_op_threads"),
        '    if device == "gpu":\n        return 1\n', "",
        [T + "plan/test_gpu_branches.py"]),
    Mutation(
        "collective_gpu_default_is_cpu_exchange", At("default_spec"),
        'return "collective" if device == "gpu" else "pscpu/xring"', 'return "pscpu/xring"',
        [T + "plan/test_gpu_branches.py"]),
    Mutation(
        "xla_cpu_flag_on_gpu", At("environment"),
        'if xla and device != "gpu":', "if xla:",
        [T + "plan/test_gpu_branches.py"]),
    # Survivors of generated_mutants.py that broke a claim, now killed.
    Mutation(
        "slurm_port_base_negative_accepted", At("ClusterSettings.refuse"),
        "if not 0 < p.slurm_port_base < 65536:", "if not 0 != p.slurm_port_base < 65536:",
        [T + "config/test_refusal_table.py"]),
    Mutation(
        "collective_timeout_negative_accepted", At("ClusterSettings.refuse"),
        "not p.collective_timeout_secs > 0:", "not p.collective_timeout_secs != 0:",
        [T + "config/test_refusal_table.py"]),
    Mutation(
        "collective_timeout_valid_refused", At("ClusterSettings.refuse"),
        "not p.collective_timeout_secs > 0:", "not p.collective_timeout_secs > 1:",
        [T + "config/test_refusal_table.py"]),
    Mutation(
        "task_index_far_past_the_end_accepted", At("validate_cluster"),
        "if p.task_index >= len(hosts):", "if p.task_index == len(hosts):",
        [T + "config/test_refusal_table.py"]),
    Mutation(
        "cpuinfo_flags_line_not_read", At("_cpu_flags"),
        'if line.startswith("flags"):', 'if not line.startswith("flags"):',
        [T + "recipe/test_gpu_capability.py"]),
    Mutation(
        "cpu_branch_by_identity", At("_probe_machine"),
        'if device == "cpu":', 'if device is "cpu":',
        [T + "recipe/test_gpu_capability.py"]),
    # A file missing from the CIFAR-10 download is skipped.
    Mutation(
        "cifar_missing_train_file_skipped", At("find_files", module="cifar10"),
        "    if files and missing and os.path.isfile(", "    if False and os.path.isfile(",
        [T + "input/test_missing_training_file.py", T + "commands/test_newcomer_errors.py"]),
    # --eval of a run trained on files scores synthetic data.
    Mutation(
        "eval_input_unchecked", At("main", module="train"),
        "            run_record.check_eval_input(record, params.data_dir, named)\n", "",
        [T + "state/test_eval_input_recorded.py"]),
    # The run record forgets the training data's directory.
    Mutation(
        "record_without_data_dir", At("_resume_chief"),
        "        state, changeable, data_dir=plan.input.data_dir, user_model=handles.user_model,\n",
        "        state, changeable, user_model=handles.user_model,\n",
        [T + "state/test_eval_input_recorded.py"]),
    # Export into a new folder fails in Keras.
    Mutation(
        "export_parent_not_made", At("_make_parent"),
        "    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)\n",
        "    pass\n",
        [T + "state/test_export_new_folder.py"]),
    # The out-of-memory message of a worker leaves out the other workers
    # (3 per device x 2 devices, global batch 12).
    Mutation(
        "oom_message_one_worker", At("Trainer._out_of_memory"),
        '        cluster = f" x {workers} workers" if workers > 1 else ""\n',
        '        cluster = ""\n',
        [T + "plan/test_multiworker_numbers.py"]),
    # An out-of-memory step is TensorFlow's traceback.
    Mutation(
        "oom_not_translated", At("Trainer._step"),
        "                except tf.errors.ResourceExhaustedError as err:\n",
        "                except ZeroDivisionError as err:\n",
        [T + "engine/test_out_of_memory.py", T + "commands/test_newcomer_errors.py"]),
    # An out-of-memory input build (--batch_size=10000000) is a traceback.
    Mutation(
        "oom_input_build_not_translated", At("Trainer._make_feed"),
        "        except tf.errors.ResourceExhaustedError as err:\n"
        "            raise self._out_of_memory(\"while building the input\",",
        "        except ZeroDivisionError as err:\n"
        "            raise self._out_of_memory(\"while building the input\",",
        [T + "engine/test_out_of_memory.py", T + "commands/test_newcomer_errors.py"]),
    Mutation(
        "oom_input_build_not_caught_by_cli", At("main", module="train"),
        "            errors.OutOfMemoryError) as err:  # OutOfMemoryError: the input's build",
        "            ) as err:  # OutOfMemoryError: the input's build",
        [T + "engine/test_out_of_memory.py::test_out_of_memory_while_the_input_is_built_is_one_line_and_exit_2"]),
    # A library run on the user's model records "trivial".
    Mutation(
        "user_model_recorded_as_registry", At("record_of"),
        '        "model": keras_model.name if user_model else model,\n',
        '        "model": model,\n',
        [T + "state/test_user_model_record.py::test_the_record_names_the_users_model"]),
    Mutation(
        "user_model_flag_not_passed_to_record", At("_resume_chief"),
        "data_dir=plan.input.data_dir, user_model=handles.user_model,\n",
        "data_dir=plan.input.data_dir,\n",
        [T + "state/test_user_model_record.py"]),
    Mutation(
        "user_model_eval_not_refused", At("main", module="train"),
        '            run_record.check_rebuildable(record, f"--eval: {named}", "evaluate")\n',
        "",
        [T + "state/test_user_model_record.py::test_eval_on_the_command_line_says_it_needs_the_library"]),
    Mutation(
        "user_model_export_not_refused", At("export"),
        '    run_record.check_rebuildable(\n',
        '    (lambda *a: None)(\n',
        [T + "state/test_user_model_record.py::test_export_says_it_needs_the_library"]),
    Mutation(
        "user_model_cli_resume_not_refused", At("check", module="run_record"),
        "    elif record.get(USER_MODEL):\n",
        "    elif False:\n",
        [T + "state/test_user_model_record.py::test_a_command_line_resume_is_refused_and_a_library_one_goes_on"]),
    Mutation(
        "user_model_name_compared_at_resume", At("check", module="run_record"),
        '        given = {name: value for name, value in given.items() if name != "model"}\n',
        "        pass\n",
        [T + "state/test_user_model_record.py::test_a_command_line_resume_is_refused_and_a_library_one_goes_on"]),
    # A resume on fewer training files fails at the first step.
    Mutation(
        "resume_input_not_checked", At("_resume_chief"),
        "        contract.check_training_input(record, input_record, plan.input.data_dir, where)\n",
        "",
        [T + "state/test_resume_input.py"]),
    Mutation(
        "resume_input_not_recorded", At("record_of"),
        "        **(input_record or {}),\n",
        "",
        [T + "state/test_resume_input.py"]),
    Mutation(
        "resume_input_files_not_compared", At("check_training_input"),
        "    before, now = (record.get(\"input_examples\"), record[\"input_files\"]), (\n"
        "        current[\"input_examples\"], current[\"input_files\"])\n",
        "    before, now = (record.get(\"input_examples\"), []), (\n"
        "        current[\"input_examples\"], [])\n",
        [T + "state/test_resume_input.py", T + "commands/test_newcomer_errors.py"]),
    # The same file names holding another number of examples resume.
    Mutation(
        "resume_input_examples_not_compared", At("check_training_input"),
        "    if before == now:\n", "    if before[1] == now[1]:\n",
        [T + "state/test_record_fields.py", T + "state/test_resume_input.py::"
         "test_a_resume_on_the_same_file_names_holding_fewer_examples_is_refused"]),
    # Any graph error of a step on files is "bad input data".
    Mutation(
        "step_error_always_blamed_on_input", At("input_errors"),
        "            if input_source.description and from_input_pipeline(err):\n",
        "            if input_source.description:\n",
        [T + "engine/test_step_error_blame.py::test_a_kernels_error_in_a_step_is_not_blamed_on_the_data"]),
    Mutation(
        "step_input_error_never_blamed", At("from_input_pipeline"),
        '    return (tf_errors.ITERATOR_NODE in err.message\n'
        '            or tf_errors.ITERATOR_PIPELINE in err.message)\n',
        '    return False\n',
        [T + "engine/test_step_error_blame.py::test_an_input_pipeline_error_in_a_step_names_the_data",
         T + "input/test_input_readers.py::test_imagenet_payload_corruption_fails_step_naming_data_dir"]),
    Mutation(
        "cpu_fp16_nchw_not_refused", At("check_half_precision_layout"),
        '    if device == "cpu" and data_format == "NCHW" and half == "float16":\n',
        "    if False:\n",
        [T + "engine/test_step_error_blame.py::test_cpu_float16_nchw_is_refused_before_any_step",
         T + "commands/test_newcomer_errors.py"]),
    # --num_epochs on synthetic data needs --num_examples_per_epoch.
    Mutation(
        "synthetic_epochs_without_known_size", At("epoch_origin"),
        "    if input_facts.synthetic and params.num_epochs is not None and (\n",
        "    if False and (\n",
        [T + "plan/test_synthetic_epochs.py", T + "config/test_refusal_table.py"]),
    Mutation(
        "synthetic_known_size_for_user_inputs", At("epoch_origin"),
        "    if input_facts.synthetic and params.num_epochs is not None and (\n",
        "    if params.num_epochs is not None and (\n",
        [T + "input/test_input_epochs.py::test_num_epochs_needs_finite_data"]),
    # The batch-larger-than-epoch advice counts one worker's devices: "at
    # most 5 per device" for 2 workers x 2 devices, which still does not fit.
    Mutation(
        "batch_fits_advice_one_worker", At("check_batch_fits_epoch"),
        "    devices = towers * workers\n", "    devices = towers\n",
        [T + "plan/test_multiworker_numbers.py", T + "input/test_batch_larger_than_epoch.py"]),
    # The header's per-device batch of a multi-worker run counts one worker.
    Mutation(
        "header_per_device_one_worker", At("batch_size"),
        "{batches.global_batch / topology.num_towers / topology.num_workers:g} per device",
        "{batches.global_batch / topology.num_towers:g} per device",
        [T + "plan/test_multiworker_numbers.py"]),
    # The intra-op pool of workers sharing a host counts one worker's towers.
    Mutation(
        "threads_ignore_workers_on_host", At("intra_op_threads"),
        "    sharing = workers_on_host * towers\n", "    sharing = towers\n",
        [T + "plan/test_multiworker_numbers.py"]),
    Mutation(
        "epoch_line_missing", At("training_info"),
        '        *([("Epoch", static["Epoch"])] if "Epoch" in static else []),\n',
        "",
        [T + "plan/test_synthetic_epochs.py"]),
    Mutation(
        "imagenet_known_size_off_by_one", At("KNOWN_EXAMPLES_PER_EPOCH"),
        '"imagenet": 1281167,', '"imagenet": 1281168,',
        [T + "plan/test_synthetic_epochs.py"]),
    # Packs sized in bytes (--gradient_pack_mb), a 25 MB default on GPUs.
    Mutation(
        "byte_packs_ignored", At("plan", module="packing"),
        "                  if pack_bytes else num_packs)\n",
        "                  if False else num_packs)\n",
        [T + "engine/test_repacking.py::test_packs_sized_in_bytes_are_the_fewest_that_fit",
         T + "engine/test_exchange_graph.py::test_first_pack_of_the_step_waits_only_for_the_last_layers",
         T + "config/test_exchange_checks.py::test_header_prints_packs_sized_in_bytes"]),
    Mutation(
        "byte_packs_one_too_few", At("_packs_for_bytes"),
        "math.ceil(total_bytes / pack_bytes)", "int(total_bytes / pack_bytes)",
        [T + "engine/test_repacking.py::test_packs_sized_in_bytes_are_the_fewest_that_fit"]),
    Mutation(
        "byte_packs_uncapped", At("_packs_for_bytes"),
        "min(MAX_PACKS, math.ceil(", "min(10**9, math.ceil(",
        [T + "engine/test_repacking.py::test_packs_sized_in_bytes_stop_at_the_pack_limit"]),
    Mutation(
        "collective_ignores_pack_bytes", At("plan_for_exchange"),
        "    return plan(tensors, exchange.gradient_repacking, exchange.gradient_pack_bytes)\n",
        "    return plan(tensors, exchange.gradient_repacking)\n",
        [T + "engine/test_exchange_graph.py::test_first_pack_of_the_step_waits_only_for_the_last_layers"]),
    Mutation(
        "replicated_ignores_pack_bytes", At("ReplicatedManager._all_reduce"),
        "pack_bytes=exchange.gradient_pack_bytes)", "pack_bytes=None)",
        [T + "engine/test_exchange_graph.py::test_first_pack_of_the_step_waits_only_for_the_last_layers"]),
    Mutation(
        "gpu_default_one_pack", At("gradient_pack_bytes"),
        "        return int(DEFAULT_GPU_PACK_MB * 10**6)\n", "        return None\n",
        [T + "config/test_exchange_checks.py::test_the_plan_sizes_packs_by_default_on_gpus_only"]),
    Mutation(
        "cpu_gets_the_gpu_pack_default", At("gradient_pack_bytes"),
        '    if (device == "gpu" and p.variable_update in _EXCHANGING',
        '    if (p.variable_update in _EXCHANGING',
        [T + "config/test_exchange_checks.py::test_the_plan_sizes_packs_by_default_on_gpus_only"]),
    Mutation(
        "xla_takes_the_gpu_pack_default", At("gradient_pack_bytes"),
        '            and not xla_compile):\n', "            ):\n",
        [T + "config/test_exchange_checks.py::test_the_plan_sizes_packs_by_default_on_gpus_only"]),
    Mutation(
        "pack_size_and_count_both_accepted", At("_validate_pack_size"),
        "    if pack_mb is not None and p.gradient_repacking:\n", "    if False:\n",
        [T + "config/test_exchange_checks.py::test_refused_combinations_name_the_flags",
         T + "config/test_refusal_table.py"]),
    Mutation(
        "xla_accepts_counted_packs", At("_validate_pack_size"),
        "    if p.xla_compile and p.gradient_repacking:\n", "    if False:\n",
        [T + "config/test_exchange_checks.py::test_refused_combinations_name_the_flags",
         T + "config/test_refusal_table.py"]),
    Mutation(
        "xla_accepts_sized_packs", At("_validate_pack_size"),
        "    if p.xla_compile and pack_mb:\n", "    if False:\n",
        [T + "config/test_exchange_checks.py::test_refused_combinations_name_the_flags",
         T + "config/test_refusal_table.py"]),
    Mutation(
        "slow_link_fraction_over_t1", File("bench/bench_slow_link.py"),
        "    return (t_n - t_indep) / (t_1 - t_indep)\n", "    return (t_n - t_indep) / t_1\n",
        [T + "package/test_bench_slow_link.py::test_exposed_fraction_and_step_time"]),
    # What the library and the messages should say.
    Mutation(
        "uint8_images_accepted", At("from_arrays"),
        "    array_checks.check(images)  # raw pixels\n", "",
        [T + "input/test_array_checks.py", T + "commands/test_newcomer_errors.py"]),
    Mutation(
        "data_dir_file_called_missing", At("InputSettings.refuse"),
        "              if os.path.isfile(p.data_dir) else \"no such directory\")",
        "              if False else \"no such directory\")",
        [T + "commands/test_small_messages.py::test_a_data_dir_naming_a_file_says_so"]),
    Mutation(
        "model_without_did_you_mean", At("ModelSettings.refuse"),
        "        close = difflib.get_close_matches(p.model, catalog.registered_names(), n=1)\n",
        "        close = []\n",
        [T + "commands/test_small_messages.py::test_a_misspelled_model_gets_a_did_you_mean"]),
    Mutation(
        "header_without_weight_decay", At("training_info"),
        '        ("Weight decay", f"{recipe.loss.weight_decay:g}"),\n', "",
        [T + "commands/test_small_messages.py::test_the_header_shows_the_weight_decay"]),
    Mutation(
        "one_devices_plural", At("static_lines"),
        "f\"{towers} device{'' if towers == 1 else 's'}\")", "f\"{towers} devices\")",
        [T + "commands/test_small_messages.py::test_one_device_per_worker_is_singular"]),
    # Boundaries the flag checks accept, moved by one (FLAG_CHECKS_ACCEPT).
    Mutation(
        "num_eval_batches_one_refused", At("Evaluation.refuse"),
        "p.num_eval_batches is not None and p.num_eval_batches < 1:",
        "p.num_eval_batches is not None and p.num_eval_batches <= 1:",
        [T + "config/test_refusal_table.py"]),
    Mutation(
        "display_perf_ewma_one_refused", At("Display.refuse"),
        "not 0 < p.display_perf_ewma <= 1:", "not 0 < p.display_perf_ewma < 1:",
        [T + "config/test_refusal_table.py"]),
    Mutation(
        "optimizer_option_zero_refused", At("Optimizer.refuse"),
        "if not low <= getattr(p, flag) < high:", "if not low < getattr(p, flag) < high:",
        [T + "config/test_refusal_table.py"]),
    Mutation(
        "base_batch_size_one_refused", At("LearningRateSettings.refuse"),
        "        if p.base_batch_size < 1:", "        if p.base_batch_size <= 1:",
        [T + "config/test_refusal_table.py"]),
    Mutation(
        "launcher_negative_restarts_accepted", At("parse", module="launch"),
        "elif options.max_restarts < 0:", "elif options.max_restarts < -1:",
        [T + "cluster/test_launch_restarts.py"]),
    # Params(model=NAME) with Trainer(model=<keras model>)
    # taken again (the name silently ignored), or Params' default the name again.
    Mutation(
        "params_model_with_keras_model_accepted", At("Trainer._follow_model"),
        '        up_front.check_one_model(params.model, model)\n', "",
        [CHECKS + "test_a_registry_model_named_together_with_a_keras_model_is_refused",
         T + "commands/test_newcomer_errors.py"]),
    Mutation(
        "params_model_default_named", At("ModelSettings.model"),
        '        None, "Model name from the registry', '        "trivial", "Model name from the registry',
        [CHECKS + "test_a_registry_model_named_together_with_a_keras_model_is_refused"]),
    # A global batch larger than an epoch of real data taken
    # (every step one partial batch); its boundary (a batch of exactly the
    # epoch) refused; an input's own epochs, or --eval, refused too.
    Mutation(
        "batch_larger_than_epoch_accepted", At("check_batch_fits_epoch"),
        "            or not examples or examples >= global_batch):",
        "            or not examples or examples >= 0):",
        [T + "input/test_batch_larger_than_epoch.py", T + "config/test_refusal_table.py"]),
    Mutation(
        "batch_equal_to_epoch_refused", At("check_batch_fits_epoch"),
        "            or not examples or examples >= global_batch):",
        "            or not examples or examples > global_batch):",
        [T + "input/test_batch_larger_than_epoch.py::"
         "test_the_cli_refuses_a_global_batch_larger_than_the_files"]),
    Mutation(
        "input_own_epochs_batch_refused", At("check_batch_fits_epoch"),
        "    if (params.eval or input_facts.user_epochs or input_facts.steps_per_epoch is None",
        "    if (params.eval or input_facts.steps_per_epoch is None",
        [T + "input/test_batch_larger_than_epoch.py::"
         "test_partial_batches_that_were_asked_for_still_train"]),
    Mutation(
        "eval_batch_larger_than_epoch_refused", At("check_batch_fits_epoch"),
        "    if (params.eval or input_facts.user_epochs or",
        "    if (input_facts.user_epochs or",
        [T + "input/test_batch_larger_than_epoch.py::"
         "test_partial_batches_that_were_asked_for_still_train"]),
    # A flag parser's reason dropped (a site of the refusal table's walk).
    Mutation(
        "gpu_indices_listed_twice_accepted", At("parse_gpu_indices"),
        "    if len(set(indices)) != len(indices):", "    if False:",
        [T + "config/test_refusal_table.py"]),
    # --- scatter/xring (Horovod's hierarchy) ---
    # The CPU reduce-scatter drops the remainder of a pack not divisible by L.
    Mutation(
        "scatter_remainder_dropped", At("shard_sizes"),
        "    return [base_size + (i < longer) for i in range(parts)]",
        "    return [base_size for i in range(parts)]",
        [T + "engine/test_repacking.py::test_scatter_shards_a_pack_not_divisible_by_the_devices",
         T + "engine/test_repacking.py::test_packs_equal_one_pack"]),
    # One device carries the whole pack across workers (today's one-member
    # shape): the sums stay right, the per-device shards are gone.
    Mutation(
        "scatter_one_device_carries_the_pack", At("shard_sizes"),
        "    return [base_size + (i < longer) for i in range(parts)]",
        "    return [length] + [0] * (parts - 1)",
        [T + "engine/test_repacking.py::test_scatter_shards_a_pack_not_divisible_by_the_devices",
         T + "engine/test_multiworker.py::test_two_workers_equal_one_process_with_four_devices"]),
    # Every shard summed on device 0 instead of its own device.
    Mutation(
        "scatter_shards_summed_on_device0", At("ClusterExchange._add_n_reduce_scatter"),
        "            with tf.device(device):\n                shards.append(tf.add_n(pieces))",
        "            with tf.device(self.devices[0]):\n                shards.append(tf.add_n(pieces))",
        [T + "engine/test_repacking.py::test_scatter_shards_a_pack_not_divisible_by_the_devices"]),
    # One cross-worker group for every local index.
    Mutation(
        "scatter_one_group_for_all_local_indices", At("shard_group"),
        "    return (SHARD_GROUP_BASE[device_type(device)] + num_devices * (num_devices - 1) // 2\n"
        "            + index)",
        "    return (SHARD_GROUP_BASE[device_type(device)] + num_devices * (num_devices - 1) // 2)",
        [GPU_GRAPH + "test_scatter_xring_crosses_from_every_gpu_in_a_group_per_local_index"]),
    # Every shard crosses workers from GPU 0.
    Mutation(
        "scatter_shards_cross_from_gpu0", At("ClusterExchange._scattered_sum"),
        "                    shard, device, shard_group(device, len(self.devices), i),",
        "                    shard, self.devices[0], shard_group(device, len(self.devices), i),",
        [GPU_GRAPH + "test_scatter_xring_crosses_from_every_gpu_in_a_group_per_local_index"]),
    # The worker's local NCCL group keyed alike on every worker.
    Mutation(
        "scatter_local_group_shared_by_workers", At("ClusterExchange._local_group"),
        "        return LOCAL_GROUP_BASE + 1000 * len(self.devices) + self.task",
        "        return LOCAL_GROUP_BASE + 1000 * len(self.devices)",
        [GPU_GRAPH + "test_scatter_xring_crosses_from_every_gpu_in_a_group_per_local_index"]),
    # The local reduce-scatter without the nccl hint (no ring implementation).
    Mutation(
        "scatter_reduce_scatter_without_nccl_hint", At("ClusterExchange._nccl_reduce_scatter"),
        "                        ordering_token=self._tokens[i].handle, communication_hint=\"nccl\"))\n"
        "            return out\n        return self._chains.run(self.devices, build), width",
        "                        ordering_token=self._tokens[i].handle, communication_hint=\"auto\"))\n"
        "            return out\n        return self._chains.run(self.devices, build), width",
        [GPU_GRAPH + "test_scatter_xring_crosses_from_every_gpu_in_a_group_per_local_index"]),
    # The GPU default back to the one-member shape, or to scatter/xring (two
    # NCCL communicators per GPU) instead of the flat collective.
    Mutation(
        "collective_gpu_default_one_member", At("default_spec"),
        'return "collective" if device == "gpu" else "pscpu/xring"',
        'return "nccl/xring" if device == "gpu" else "pscpu/xring"',
        [T + "config/test_exchange_checks.py::test_defaults_and_accepted_specs",
         T + "plan/test_gpu_branches.py::test_the_exchange_defaults_per_device_and_mode"]),
    Mutation(
        "collective_gpu_default_scatter", At("default_spec"),
        'return "collective" if device == "gpu" else "pscpu/xring"',
        'return "scatter/xring" if device == "gpu" else "pscpu/xring"',
        [T + "config/test_exchange_checks.py::test_defaults_and_accepted_specs",
         T + "plan/test_gpu_branches.py::test_the_exchange_defaults_per_device_and_mode"]),
    # The gathers left off each GPU's order: no chain edge, and the CPU
    # scalars' ordering token instead of their GPU's (the token alone orders
    # a GPU's collective V2 ops, so both must go for the order to break).
    Mutation(
        "scatter_gather_off_the_gpu_order", At("ClusterExchange._nccl_gather"),
        "                        key + KEYS[\"gather\"] - KEYS[\"grads\"], ordering_token=self._tokens[i].handle,\n"
        "                        communication_hint=\"nccl\"))\n"
        "            return out\n        gathered = self._chains.run(self.devices, build)",
        "                        key + KEYS[\"gather\"] - KEYS[\"grads\"], ordering_token=self._tokens[-1].handle,\n"
        "                        communication_hint=\"nccl\"))\n"
        "            return out\n        gathered = build()",
        [GPU_GRAPH + "test_each_gpu_has_one_ordering_chain"]),
    # The gather in a local group of its own (a second NCCL communicator per
    # GPU, one more group to open before step 1).
    Mutation(
        "scatter_gather_in_a_second_local_group", At("ClusterExchange._nccl_gather.build"),
        "                        tf.reshape(shard, [width]), count, self._local_group(),",
        "                        tf.reshape(shard, [width]), count, self._local_group() + 500,",
        [T + "engine/test_gpu_step_facts.py::test_cluster_step_on_gpus"]),
    # Every pack's sum waits for the last pack's gradients (the conv kernel's,
    # ready last): nothing overlaps the backward pass.
    Mutation(
        "packs_wait_for_the_last_pack", At("exchange_packs"),
        "            run(k, lambda d, p=p: packing.gather(per_device[d], p), placed.get(k, []),\n",
        "            run(k, lambda d, p=p: packing.gather(per_device[d], p) + tf.cast(0 * tf.reduce_sum(\n"
        "                packing.gather(per_device[d], packs[-1])), p.dtype), placed.get(k, []),\n",
        [GPU_GRAPH + "test_scatter_xring_first_byte_sized_pack_waits_for_no_conv_backward"]),
    # The step checks the exchanged sum, not every tower's gradients: each
    # pack's check on each device dropped.
    Mutation(
        "summed_gradient_finite_check_dropped", At("exchange_packs.run"),
        "finite[d].append(tf.reduce_all(tf.math.is_finite(sums[d])))",
        "finite[d].append(tf.constant(True))",
        [T + "engine/test_finite_check.py"]),
    Mutation(
        "summed_check_reads_tower_0_only", At("exchange_packs.run"),
        "finite[d].append(tf.reduce_all(tf.math.is_finite(sums[d])))",
        "finite[d].append(tf.reduce_all(tf.math.is_finite(flats[0])))",
        [T + "engine/test_finite_check.py::test_nan_gradients_on_one_tower_apply_nothing_on_any_copy"]),
    # The check skips the riders (the step's loss in the last pack): an
    # infinite loss with finite gradients is applied.
    Mutation(
        "pack_check_skips_the_riders", At("exchange_packs.run"),
        "finite[d].append(tf.reduce_all(tf.math.is_finite(sums[d])))",
        "finite[d].append(tf.reduce_all(tf.math.is_finite(sums[d][:size])))",
        [T + "engine/test_finite_check.py::"
         "test_an_infinite_loss_in_an_earlier_micro_batch_skips_the_update"]),
    # Each copy applies whatever its verdict (no per-device branch).
    Mutation(
        "copies_apply_without_their_verdict", At("ReplicatedManager.apply"),
        "                applied.append(update() if allowed is None else\n"
        "                               tf.cond(allowed, update, lambda: tf.constant(False)))\n",
        "                applied.append(update())\n",
        [T + "engine/test_finite_check.py::test_nan_gradients_on_one_tower_apply_nothing_on_any_copy"]),
    # Every copy decides from device 0's verdict (a value gathered from one
    # device to every other before each update).
    Mutation(
        "every_copy_takes_device0s_verdict", At("ReplicatedManager.apply"),
        "                allowed = exchanged.finite[i] if exchanged.finite is not None else None\n",
        "                allowed = exchanged.finite[0] if exchanged.finite is not None else None\n",
        [T + "engine/test_gpu_step_facts.py::"
         "test_the_statistics_reach_each_device_in_one_transfer"]),
    # One branch on the CPU around every copy's update again: one op gathers
    # every copy's variables and sums before any update.
    Mutation(
        "one_cpu_branch_for_every_copy", At("TrainStep._apply"),
        "            if sums_checked:\n"
        "                return self.variables.apply(exchanged, stats, timestamp=after, **scale)\n",
        "            if sums_checked:\n"
        "                with tf.device('/cpu:0'):\n"
        "                    applied = tf.cond(\n"
        "                        tf.reduce_all(tf.stack(exchanged.finite)),\n"
        "                        lambda: self.variables.apply(exchanged._replace(finite=None), "
        "stats, **scale),\n"
        "                        lambda: tf.constant(False))\n"
        "                    return applied, after([applied])\n",
        [T + "engine/test_gpu_step_facts.py::test_no_op_gathers_every_device_before_the_update"]),
    Mutation(
        "towers_check_gradients_despite_the_sum", At("TrainStep._train_step"),
        "micro_batch, check_gradients=not sums_checked)",
        "micro_batch, check_gradients=True)",
        [T + "engine/test_finite_check.py::test_the_summed_gradient_is_checked_once_not_per_tower"]),
    # An earlier micro-batch's infinite loss (finite gradients) is carried by
    # the accumulated flag; the exchanged sum's check cannot see it.
    Mutation(
        "accumulation_finite_only_last_micro_batch", At("TrainStep._take_update"),
        "        combined, finite = [], [all_finite]\n",
        "        combined, finite = [], list(finite)\n",
        [T + "engine/test_finite_check.py::test_an_infinite_loss_in_an_earlier_micro_batch_skips_the_update"]),
    # --help and docs/flags.md show what --model's None means.
    Mutation(
        "model_default_not_shown", At("shown_default"),
        "        return catalog.DEFAULT_MODEL\n    return None",
        "        return None\n    return None",
        [T + "commands/test_cli.py::test_help_lists_towertrains_flags_grouped_with_defaults"]),
    # A staged run builds its drain step in warmup (staging's cost).
    Mutation(
        "drain_step_built_in_timed_steps", At("FeedPosition.begin"),
        "            if fence is not None:\n                self.add_fence(fence)\n",
        "",
        [T + "engine/test_staging_warmup.py::test_every_variant_is_first_called_in_warmup"]),
    Mutation(
        "warmup_fence_one_step_late", At("warmup_fence"),
        "    return start_step + 1 if warmup >= 2 else None",
        "    return start_step + 2 if warmup >= 2 else None",
        [T + "engine/test_staging_warmup.py::test_every_variant_is_first_called_in_warmup"]),
    Mutation(
        "resumed_run_warmup_not_shortened", At("warmup_of_run"),
        "return min(warmup, max(total_steps - start_step - 1, 0))",
        "return warmup",
        [T + "plan/test_plan.py::test_a_run_warms_up_at_most_all_but_its_last_step"]),
    # The CIFAR ResNets' parameter-free shortcut (bench_vs_tfcnn --same_network).
    Mutation(
        "pad_shortcut_not_subsampled", At("_widening_shortcut"),
        "    if strides != 1:\n        x = keras.layers.AveragePooling2D(",
        "    if False:\n        x = keras.layers.AveragePooling2D(",
        [T + "models/test_resnet_shortcut.py"]),
    Mutation(
        "channel_pad_all_before", At("_widening_shortcut"),
        "ChannelZeroPad(data_format, extra // 2, extra - extra // 2,",
        "ChannelZeroPad(data_format, extra, 0,",
        [T + "models/test_resnet_shortcut.py::test_the_shortcut_is_the_subsampled_input_with_zero_channels"]),
    Mutation(
        "pad_kind_builds_projection", At("_widening_shortcut"),
        '    if kind == "projection":\n        return _conv(',
        '    if kind in SHORTCUTS:\n        return _conv(',
        [T + "models/test_resnet_shortcut.py::test_pad_resnet20_drops_exactly_the_projection_kernels"]),
    Mutation(
        "same_network_flag_ignored", File("bench/bench_vs_tfcnn.py"),
        "    if not args.same_network:\n        return",
        "    if True:\n        return",
        [T + "package/test_bench_vs_tfcnn.py::test_same_network_runs_the_pad_variant_through_the_cli"]),
    # bench/kernel_counts.py: Send/Recv counted as kernels; a program's
    # Tensors process (tf_cnn_benchmarks' Timeline) counted as a device.
    Mutation(
        "kernel_counts_count_send_recv", File("bench/kernel_counts.py"),
        "        if op not in SEND_RECV:\n", "        if True:\n",
        [T + "package/test_kernel_counts.py"]),
    Mutation(
        "kernel_counts_any_tfcnn_process", File("bench/kernel_counts.py"),
        '    if process_name.endswith(" Compute") and "/device:" in process_name:',
        '    if "/device:" in process_name:',
        [T + "package/test_kernel_counts.py"]),
    # Summaries ask for their outputs in warm-up, so those variants build untimed.
    Mutation(
        "summaries_variant_built_in_timed_steps", At("Summaries.step_outputs"),
        "if self._due(step) or self._warmup_asks.get(step, False):",
        "if self._due(step):",
        [T + "engine/test_staging_warmup.py::test_summary_steps_variants_are_built_in_warmup_too"]),
    Mutation(
        "summaries_drain_level_ignored", At("Summaries._plan_warmup"),
        "            needed.add((kind(total), self._due(total)))",
        "            needed.add((kind(total), False))",
        [T + "engine/test_staging_warmup.py::test_summary_steps_variants_are_built_in_warmup_too"]),
    Mutation(
        "unstaged_first_warmup_step_seen_as_drain", At("Summaries._plan_warmup"),
        "        staged = self.handles.staging_depth > 0\n",
        "        staged = True\n",
        [T + "engine/test_staging_warmup.py::test_unstaged_summary_runs_build_both_variants_in_warmup"]),
    # CPU towers of one process share the intra-op pool (1.15-1.22x on 2 cores).
    Mutation(
        "towers_take_every_core", At("intra_op_threads"),
        "    sharing = workers_on_host * towers\n",
        "    sharing = workers_on_host\n",
        [T + "engine/test_runtime_flags.py::test_towers_sharing_the_cores_split_them_unless_told",
         T + "engine/test_runtime_flags.py::test_towers_of_one_process_set_the_pool_and_say_why",
         T + "engine/test_runtime_flags.py::test_cli_gives_two_cpu_towers_their_share_of_the_cores"]),
    Mutation(
        "threads_line_only_for_clusters", At("training_info"),
        "    threads = runtime.describe_threads(plan.runtime)\n    if threads:\n        info",
        "        threads = runtime.describe_threads(plan.runtime)\n        if threads:\n            info",
        [T + "engine/test_runtime_flags.py::test_cli_gives_two_cpu_towers_their_share_of_the_cores"]),
    Mutation(
        "lone_tower_split_too", At("intra_op_threads"),
        "    if sharing > 1:\n        return max(1, cores // sharing)",
        "    if sharing > 0:\n        return max(1, cores // sharing)",
        [T + "engine/test_runtime_flags.py::test_towers_sharing_the_cores_split_them_unless_told"]),
    Mutation(
        "threads_line_says_zero", At("describe_threads"),
        '    pool = process_settings.describe_pool(held) + (" per process" if held else "")\n',
        """    pool = f"{held} per process"\n""",
        [T + "package/test_bench_threads.py::test_tensorflows_choice_reaches_the_run_as_asked"]),
    Mutation(
        "scaling_rows_at_tensorflows_pool", At("main", module="scaling"),
        "        base = _one_pool(base, device, max_devices)\n",
        "",
        [T + "commands/test_scaling.py::test_json_and_csv_hold_every_configuration_and_round"]),
    # Small output faults: one round and a 398.7% efficiency unwarned, '1 epochs',
    # an evaluation's header naming the training's variable update.
    Mutation(
        "scaling_one_round_unwarned", At("warnings"),
        '    if settings["rounds"] < 2:\n', "    if False:\n",
        [T + "commands/test_scaling.py::"
         "test_one_round_and_an_efficiency_above_100_percent_are_warned_of"]),
    Mutation(
        "one_epochs", At("count"),
        """{'' if number == 1 else 's'}""", "s",
        [T + "plan/test_plan.py::"
         "test_the_header_counts_one_epoch_and_one_warmup_step_in_the_singular"]),
    Mutation(
        "eval_header_names_variables", At("run_eval"),
        '"Loss scale", "Variables",\n', '"Loss scale",\n',
        [T + "state/test_eval_checked.py::test_synthetic_eval_says_synthetic"]),
    # Checkpoint timing and set-aside, generated-mutant survivors: a timed save
    # a moment or a step late, ckpt-9 dropped as "after" ckpt-10, an earlier
    # run's diverged files blocking the rename, the step compared by identity
    # (past 256), a reader losing the disk's latest file, the files' room gone.
    Mutation(
        "timed_save_a_moment_late", At("CheckpointSaver.after_step"),
        "                time.monotonic() - self._last_save_time >= self.save_secs):",
        "                time.monotonic() - self._last_save_time > self.save_secs):",
        [SAVER + "test_saves_once_save_secs_have_passed_not_a_moment_before"]),
    Mutation(
        "timed_save_a_step_after_the_drain", At("CheckpointSaver.after_step"),
        "and step >= self._pending_step:", "and step > self._pending_step:",
        [SAVER + "test_a_timed_save_waits_for_the_staged_batches_and_not_a_step_longer"]),
    Mutation(
        "set_aside_state_without_times", At("Checkpointer.set_aside"),
        "        leftovers.rebuild_state_file(directory)\n",
        "        left = [os.path.basename(p) for p in ckpt_lib.checkpoints_on_disk(directory)]\n"
        "        if left:\n"
        "            tf.compat.v1.train.update_checkpoint_state(directory, left[-1], left)\n",
        [SAVER + "test_set_aside_makes_ckpt_9_the_latest_and_max_to_keep_counts_the_rest"]),
    Mutation(
        "set_aside_state_file_kept", At("Checkpointer.set_aside"),
        "        if tf.io.gfile.exists(state_file):\n            tf.io.gfile.remove(state_file)\n",
        "",
        [SAVER + "test_set_aside_makes_ckpt_9_the_latest_and_max_to_keep_counts_the_rest"]),
    Mutation(
        "set_aside_over_earlier_files_refused", At("Checkpointer.set_aside"),
        "aside + file[len(path):], overwrite=True)", "aside + file[len(path):], overwrite=False)",
        [SAVER + "test_a_diverged_run_sets_aside_over_an_earlier_runs_diverged_files"]),
    Mutation(
        "diverged_step_compared_by_identity", At("CheckpointSaver._set_aside_poisoned"),
        "self.checkpointer.last_saved_step != diverged_step - 1:",
        "self.checkpointer.last_saved_step is not diverged_step - 1:",
        [SAVER + "test_a_diverged_run_sets_aside_over_an_earlier_runs_diverged_files"]),
    Mutation(
        "reader_ignores_the_disks_latest", At("Checkpointer.restore_latest"),
        "self.manager.latest_checkpoint or ckpt_lib.latest(",
        "self.manager.latest_checkpoint and ckpt_lib.latest(",
        [SAVER + "test_a_non_chief_reads_the_latest_file_of_a_lost_state_file_and_writes_nothing"]),
    Mutation(
        "checkpoint_files_room_halved", At("FILE_OVERHEAD_BYTES"),
        "FILE_OVERHEAD_BYTES = 16 * 1024", "FILE_OVERHEAD_BYTES = 8 * 1024",
        [T + "state/test_checkpoint_estimate.py::"
         "test_a_small_models_space_asked_holds_the_disk_blocks_its_files_take"]),
    # export reads a damaged run record with the bare JSON error, naming no file.
    Mutation(
        "export_reads_the_record_unchecked", At("export"),
        "    info = run_record.read(run_dir)\n",
        "    import json\n    with open(os.path.join(run_dir, run_record.RUN_INFO_FILE)) as f:\n"
        "        info = json.load(f)\n",
        [T + "state/test_export.py::"
         "test_a_damaged_run_record_fails_naming_the_file_and_the_way_out"]),
    # A bare --checkpoint=ckpt-1 (from inside the train_dir): its record read
    # from "" (none found) instead of the current folder.
    Mutation(
        "bare_checkpoint_export_reads_no_record", At("export"),
        'run_dir = train_dir or os.path.dirname(path) or "."',
        "run_dir = train_dir or os.path.dirname(path)",
        [T + "state/test_export.py::"
         "test_a_bare_checkpoint_name_reads_the_record_of_the_current_folder"]),
    Mutation(
        "bare_checkpoint_eval_reads_no_record", At("directory", module="run_record"),
        'else os.path.dirname(checkpoint) or "."', "else os.path.dirname(checkpoint)",
        [T + "state/test_export.py::"
         "test_a_bare_checkpoint_name_reads_the_record_of_the_current_folder"]),
    # Generated-mutant survivors of checkpointing.py: a NaN in an optimizer slot
    # saved, a failed save's own files left, a step saved twice (past 256),
    # a timed save measured by the clock's remainder.
    Mutation(
        "non_finite_slot_saved", At("Checkpointer.non_finite_variables"),
        "        for key, slots in self.state.slots.items():", "        for key, slots in []:",
        [SAVER + "test_a_nan_in_an_optimizer_slot_alone_is_not_saved"]),
    Mutation(
        "failed_save_files_left", At("Checkpointer._remove_partial"),
        '        for file in tf.io.gfile.glob(prefix + ".*"):', "        for file in []:",
        [SAVER + "test_a_failed_save_removes_its_temporary_folder_and_its_own_files_only"]),
    Mutation(
        "saved_step_compared_by_identity", At("Checkpointer.save"),
        "        if step == self.last_saved_step:", "        if step is self.last_saved_step:",
        [SAVER + "test_a_step_saved_once_is_not_written_again"]),
    Mutation(
        "timed_save_by_remainder", At("CheckpointSaver.after_step"),
        "                time.monotonic() - self._last_save_time >= self.save_secs):",
        "                time.monotonic() % self._last_save_time >= self.save_secs):",
        [SAVER + "test_saves_once_save_secs_have_passed_not_a_moment_before"]),
    # Ctrl-C while TensorFlow imports left to Python's KeyboardInterrupt, which
    # a library's bare `except:` swallows: the run trains on.
    Mutation(
        "sigint_left_to_keyboard_interrupt", At("run_app"),
        "    previous = signal.signal(signal.SIGINT, lambda signum, frame: _exit_on_sigint(command,\n"
        "                                                                                  stderr))",
        "    previous = signal.getsignal(signal.SIGINT)",
        [T + "callbacks/test_signals.py::"
         "test_ctrl_c_during_an_import_that_catches_every_exception_still_exits_130"]),
    # A Slurm task's own GPUs set after Params asked TensorFlow for devices
    # (an unset --device): CUDA has read CUDA_VISIBLE_DEVICES, every task of
    # the node would map every GPU.
    Mutation(
        "slurm_gpus_set_after_the_device_probe", At("validate"),
        "    slurm_gpus.claim(p)", "    pass",
        [T + "cluster/test_slurm_gpus_first.py::"
         "test_a_slurm_task_of_two_per_node_sets_its_gpus_before_any_device_probe"]),
    # --global_batch_size with --batch_size: the accumulation steps not worked
    # out (each update trains on fewer examples than the global batch).
    Mutation(
        "global_batch_accumulation_ignored", At("split"),
        "        return Split(per_device, whole, global_batch_size)",
        "        return Split(per_device, 1, global_batch_size)",
        [T + "plan/test_global_batch.py::"
         "test_a_resume_on_another_topology_keeps_the_global_batch"]),
    # A resume on another topology not kept in the run record's history.
    Mutation(
        "topology_change_not_recorded", At("topology_history"),
        '        changes.append({"step": int(resumed_step), "from": before, "to": topology})',
        "        pass",
        [T + "plan/test_global_batch.py::"
         "test_a_resume_on_another_topology_keeps_the_global_batch"]),
    # --num_gpus=N on one GPU without --all_reduce_spec keeps the NCCL default,
    # which NCCL refuses across logical GPUs of one GPU; or the header hides why.
    Mutation(
        "split_gpu_keeps_the_nccl_default", At("default_spec"),
        '    if (split_gpu and device == "gpu" and variable_update in SPLIT_GPU_SPECS',
        '    if (False and device == "gpu" and variable_update in SPLIT_GPU_SPECS',
        [T + "engine/test_logical_gpus.py::"
         "test_the_default_spec_on_one_split_gpu_is_psgpu_and_the_header_says_why"]),
    Mutation(
        "split_gpu_spec_unexplained", At("Exchange.describe"),
        '        line = self.all_reduce_spec + (f" ({self.spec_note})" if self.spec_note else "")',
        '        line = self.all_reduce_spec',
        [T + "engine/test_logical_gpus.py::"
         "test_the_default_spec_on_one_split_gpu_is_psgpu_and_the_header_says_why"]),
    # has_nccl answers for a TensorFlow that cannot run NCCL (a CPU build);
    # a missing NCCL not refused; TensorFlow's own library folders not searched.
    Mutation(
        "has_nccl_ignores_the_build", At("has_nccl"),
        "    return tf.test.is_built_with_cuda() and loadable(tensorflow_folders())",
        "    return loadable(tensorflow_folders())",
        [T + "engine/test_nccl_library.py::test_has_nccl_asks_for_a_cuda_build_and_the_library"]),
    Mutation(
        "missing_nccl_not_refused", At("check_nccl"),
        "    if culprit and not nccl_library.has_nccl():", "    if False:",
        [T + "engine/test_nccl_library.py::"
         "test_an_exchange_through_nccl_without_the_library_is_refused"]),
    Mutation(
        "nccl_searched_by_name_only", At("loadable"),
        "    return any(load(os.path.join(folder, NCCL_LIBRARY)) for folder in folders",
        "    return any(False for folder in folders",
        [T + "engine/test_nccl_library.py::"
         "test_the_library_loads_from_tensorflow_s_folders_or_not_at_all"]),
    # The update's time taken in each device's update branch, which inherits
    # the GPU (Timestamp has a CPU kernel only), as before the step's clock.
    Mutation(
        "update_time_in_each_gpu_branch", At("ReplicatedManager.apply"),
        "tf.cond(allowed, update, lambda: tf.constant(False)))",
        "tf.cond(allowed, lambda update=update: (update(), tf.timestamp())[0],\n"
        "                                       lambda: tf.constant(False)))",
        [T + "engine/test_gpu_kernels.py::test_every_op_of_the_proofs_paths_has_a_gpu_kernel",
         T + "engine/test_step_clock.py::"
         "test_the_update_time_is_taken_on_the_cpu_after_every_devices_update"]),
    # The update's time not waiting for the updates.
    Mutation(
        "update_time_before_the_updates", At("StepClock.after"),
        "tf.control_dependencies(list(tensors))", "tf.control_dependencies([])",
        [T + "engine/test_step_clock.py"]),
    # The update's time taken in the step itself: program order holds it
    # behind the staging put, and a put that overruns shows no input wait.
    Mutation(
        "update_time_behind_the_staging_put", At("StepClock.after"),
        "return self._stamp_after() if timed", "return tf.timestamp() if timed",
        [T + "input/test_input_wait.py::test_an_input_bound_run_reports_its_true_wait_share",
         T + "engine/test_step_clock.py"]),
    # The losses a Keras model adds (regularizers, add_loss) left out of the
    # step's loss, as stateless_call's outputs alone left them.
    Mutation(
        "model_losses_dropped", At("forward", module="tower"),
        "    if called.losses:\n", "    if False:\n",
        [T + "engine/test_keras_model_losses.py::test_step_loss_equals_keras_compute_loss",
         T + "engine/test_keras_model_losses.py::"
         "test_twenty_steps_on_two_towers_equal_stock_keras_fit"]),
    # A weight regularizer added by every tower in full: counted once per tower.
    Mutation(
        "model_losses_not_shared", At("forward", module="tower"),
        "        loss += share * model_losses(called.losses)",
        "        loss += model_losses(called.losses)",
        [T + "engine/test_keras_model_losses.py::test_step_loss_equals_keras_compute_loss"]),
    # The model given `training` whatever its call() takes: a call(self, x)
    # model fails in the step (Keras' fit calls it without).
    Mutation(
        "training_passed_to_every_call", At("phase", module="model_call"),
        '    return {"training": training} if takes else {}',
        '    return {"training": training}',
        [T + "engine/test_keras_model_use.py::"
         "test_a_subclassed_model_trains_in_the_training_phase_as_keras_fit"]),
    # stateless_call's way: the layers under a call() that does not pass
    # `training` on run in inference mode.
    Mutation(
        "phase_not_set_for_the_layers_below", At("call", module="model_call"),
        "        outputs = model(images, **phase(model, training))",
        "        outputs = model.call(images, **phase(model, training))",
        [T + "engine/test_keras_model_use.py::"
         "test_a_subclassed_model_trains_in_the_training_phase_as_keras_fit"]),
    # A compiled model trained with the Params' recipe, its optimizer ignored.
    Mutation(
        "compiled_model_accepted", At("check_not_compiled"),
        "    if not config:\n        return", "    if True:\n        return",
        [T + "engine/test_keras_model_use.py::"
         "test_a_compiled_model_is_refused_naming_its_optimizer_and_loss"]),
    # Params' data format kept against the model's layers (the header says NCHW,
    # the model computes NHWC).
    Mutation(
        "data_format_not_followed", At("run_data_format"),
        "    if found is None or asked == found:",
        "    if True:",
        [T + "engine/test_keras_model_use.py::"
         "test_the_data_format_follows_the_model_or_a_params_naming_another_is_refused"]),
    # Raw pixels checked by dtype spelling only: float 0..255 trains.
    Mutation(
        "float_raw_pixels_accepted", At("check_pixel_range"),
        "    if low < 0 or high <= RAW_PIXEL_FLOOR:", "    if True:",
        [T + "engine/test_keras_model_use.py::"
         "test_raw_pixel_values_are_refused_unless_the_model_rescales_them"]),
    # A half-precision model in a float32 run trained without a word.
    Mutation(
        "half_policy_in_float32_run", At("check_model", module="precision"),
        "        if half:\n", "        if False:\n",
        [T + "engine/test_keras_model_use.py::"
         "test_a_half_precision_policy_in_a_float32_run_is_refused"]),
    # A second train() returns final_loss=nan with no word.
    Mutation(
        "train_with_nothing_left", At("check_steps_left"),
        "    if done >= total:", "    if False:",
        [T + "package/test_trainer_state.py::"
         "test_train_twice_says_there_is_nothing_left_to_train"]),
    # step() after close() steps on.
    Mutation(
        "step_after_close", At("Trainer.step"),
        '        trainer_state.check_open(self._closed, "step")', "        pass",
        [T + "package/test_trainer_state.py::test_step_and_train_after_close_are_refused"]),
    # A model passed in, its rate named after the registry's default model.
    Mutation(
        "user_model_rate_named_after_trivial", At("origin_of"),
        "    if user_model:\n", "    if False:\n",
        [T + "engine/test_keras_model_use.py::"
         "test_the_header_of_a_model_passed_in_names_no_model_the_user_did_not_choose"]),
    # Named misses of an independent review, each with the test that now
    # catches it. The automatic limit (timeout None) read as "off": with the
    # default settings no watch thread starts and a hung step hangs for ever.
    Mutation(
        "watchdog_default_never_watches", At("Watchdog.started"),
        "        if self.timeout == 0:\n", "        if not self.timeout:\n",
        [T + "callbacks/test_step_watchdog.py::"
         "test_with_the_default_settings_a_watch_runs_and_reports_a_hung_step"]),
    # Warm-up steps after the first armed an explicit limit only once counted.
    Mutation(
        "watchdog_explicit_limit_not_armed_in_warm_up", At("Watchdog.finished"),
        "        if self.timeout or after_warmup:\n", "        if after_warmup:\n",
        [T + "callbacks/test_step_watchdog.py::"
         "test_a_step_hung_in_warm_up_is_reported_only_with_an_explicit_limit"]),
    # The last warm-up step counted toward the automatic limit.
    Mutation(
        "watchdog_counts_the_last_warm_up_step", At("StepWatchdog.after_step"),
        "step - self.loop.start_step > max(self.warmup, 1)",
        "step - self.loop.start_step >= max(self.warmup, 1)",
        [T + "callbacks/test_step_watchdog.py::"
         "test_what_the_automatic_limit_counts_starts_at_the_first_step_after_warm_up"]),
    # The step's scalars insist on a float32 pack: --use_fp16 --fp16_vars on
    # a model without batch norm (no float32 gradient) fails with IndexError.
    Mutation(
        "extra_values_need_a_float32_pack", At("exchange_packs"),
        "        if not float_packs or extra_values_apart:\n",
        "        if extra_values_apart:\n",
        [T + "engine/test_exchange_riders.py::"
         "test_with_no_float32_gradient_the_extra_values_travel_in_a_float32_pack_of_their_own",
         T + "recipe/test_fp16_vars.py::"
         "test_fp16_vars_on_a_model_with_no_float32_variable_trains"]),
    # The scalars in the first float32 pack (the statistics' pack) instead of the last.
    Mutation(
        "scalars_ride_the_first_float32_pack", At("exchange_packs"),
        "float_packs[0] if where == FIRST else float_packs[-1]",
        "float_packs[0] if where == FIRST else float_packs[0]",
        [T + "engine/test_exchange_riders.py::"
         "test_among_several_float32_packs_stats_ride_the_first_and_scalars_the_last"]),
    # Half-precision multi-worker: the stop requests (summed with the count
    # before the towers) dropped from the step's decision, at either end.
    Mutation(
        "half_precision_stop_requests_not_decided", At("TrainStep._decide"),
        "            count, stops = update.count, counts.stops\n",
        "            count, stops = update.count, None\n",
        [T + "engine/test_multiworker.py::"
         "test_one_workers_stop_request_reaches_every_workers_decision_in_every_precision"]),
    Mutation(
        "half_precision_stop_requests_not_counted", At("TrainStep._counts"),
        "                return Counts(local, cluster, cluster, stops, in_tail)\n",
        "                return Counts(local, cluster, cluster, None, in_tail)\n",
        [T + "engine/test_multiworker.py::"
         "test_one_workers_stop_request_reaches_every_workers_decision_in_every_precision"]),
    # The checksum left out of what the workers compare: another run's ckpt-8 resumes.
    Mutation(
        "agreement_without_checksum", At("fingerprint", module="agreement"),
        "    return [1.0, float(step), float(checksum)]\n",
        "    return [1.0, float(step), 0.0]\n",
        [T + "state/test_resume_agreement.py::"
         "test_another_runs_checkpoint_of_the_same_step_is_refused_on_every_worker"]),
    # A damaged checkpoint's message offers the oldest whole checkpoint, not the newest.
    Mutation(
        "damaged_checkpoint_offers_the_oldest", At("check_whole"),
        "    earlier = [p for p in reversed(checkpoints_on_disk(os.path.dirname(path)))\n",
        "    earlier = [p for p in checkpoints_on_disk(os.path.dirname(path))\n",
        [T + "state/test_checkpoint_files.py::"
         "test_a_damaged_checkpoint_offers_the_newest_earlier_one_that_reads_whole"]),
    # CUDA_VISIBLE_DEVICES='' (no GPU for this process) read as unset.
    Mutation(
        "empty_visible_devices_read_as_unset", At("machine_gpus"),
        "    if listed is not None:\n", "    if listed:\n",
        [T + "cluster/test_gpu_share.py::"
         "test_an_empty_cuda_visible_devices_means_no_gpu_however_many_the_driver_shows"]),
    # --stop_at_top_1_accuracy only above the threshold: reached exactly, the run goes on.
    Mutation(
        "stop_at_top_1_only_above", At("PeriodicEval._evaluate"),
        "result.top1 >= self.stop_at_top_1", "result.top1 > self.stop_at_top_1",
        [T + "callbacks/test_eval_flags.py::"
         "test_stop_at_top_1_accuracy_stops_once_top_1_reaches_the_threshold"]),
    # A failed health check never forgotten: slow answers add up to a dead peer.
    Mutation(
        "peer_watch_never_forgets_a_failure", At("PeerWatch._run"),
        "                    failed.pop(index, None)\n", "",
        [T + "cluster/test_peer_watch.py::"
         "test_a_failed_check_is_forgotten_once_the_peer_answers_again"]),
    # Given up one check early.
    Mutation(
        "peer_watch_gives_up_a_check_early", At("PeerWatch._run"),
        "if failed[index] >= FAILED_CHECKS and", "if failed[index] >= FAILED_CHECKS - 1 and",
        [T + "cluster/test_peer_watch.py::"
         "test_a_peer_is_given_up_at_exactly_failed_checks_in_a_row"]),
    # A lost peer read as one event: TensorFlow's abort logs left on the
    # survivors' output; the launcher killing the survivors before they say
    # which peer they lost; the chief not saving the step it last completed.
    Mutation(
        "abort_logs_left_on_the_output", At("main", module="train"),
        "before_server=lambda joined: worker_log.divert(joined.task_index)",
        "before_server=None",
        [T + "cluster/test_lost_peer_line.py"]),
    Mutation(
        "survivors_killed_at_once", At("Workers.supervise"),
        "                    deadline = time.monotonic() + grace",
        "                    deadline = time.monotonic()",
        [T + "cluster/test_lost_peer_line.py"]),
    # The abort lines kept from the log (TensorFlow's C++ threshold left at
    # the CLI's FATAL): the survivors' logs empty, named by no line; a killed
    # worker's empty log left behind.
    Mutation(
        "abort_lines_not_logged", At("main", module="train"),
        "        worker_log.before_join()\n", "",
        [T + "cluster/test_lost_peer_line.py"]),
    Mutation(
        "clean_run_log_left", At("discard"),
        '            os.remove(_STATE["path"])', "            pass",
        [T + "commands/test_worker_log.py::"
         "test_a_clean_end_removes_the_log_a_failure_keeps_it"]),
    Mutation(
        "verbose_run_sets_grpc_verbosity", At("before_join"),
        "    if not tf_import.start_up_lines_shown():\n", "    if True:\n",
        [T + "commands/test_worker_log.py::"
         "test_before_join_lets_tensorflows_error_lines_through"]),
    Mutation(
        "killed_workers_empty_logs_left", At("Workers.kill"),
        "        self._remove_empty_logs()\n", "",
        [T + "cluster/test_lost_peer_line.py"]),
    # With a batch staged (the default on files), the chief keeps its last
    # periodic checkpoint after a lost peer (the steps since are lost); or
    # saves past the staged batches of an input whose iterator position is
    # in the checkpoint (the resume would skip them).
    Mutation(
        "lost_peer_save_refused_for_staged_batches", At("CheckpointSaver._save_after_peer_loss"),
        "        if self.handles.staged_batches() and self.checkpointer.position_in_checkpoint():",
        "        if self.handles.staged_batches():",
        [T + "cluster/test_elastic_launch.py::"
         "test_a_lost_worker_and_one_taken_back_at_a_checkpoint_are_said_and_recorded"]),
    Mutation(
        "last_save_skips_an_iterators_staged_batches", At("Checkpointer.save"),
        "not (last and not self.position_in_checkpoint()):", "not last:",
        [T + "callbacks/test_checkpoint_saver.py::"
         "test_the_save_after_a_lost_peer_leaves_staged_batches_only_to_a_step_positioned_input"]),
    Mutation(
        "last_save_refused_for_staged_batches", At("Checkpointer.save"),
        "not (last and not self.position_in_checkpoint()):", "True:",
        [T + "callbacks/test_checkpoint_saver.py::"
         "test_the_save_after_a_lost_peer_leaves_staged_batches_only_to_a_step_positioned_input"]),
    Mutation(
        "chief_not_saved_after_a_lost_peer", At("CheckpointSaver.close"),
        "                self._save_after_peer_loss(error)", "                pass",
        [T + "cluster/test_lost_peer_line.py"]),
    # A seed outside NumPy's range reaches Keras' seed setter: a traceback.
    Mutation(
        "seed_range_unchecked", At("ModelSettings.refuse"),
        "        if not 0 <= p.tf_random_seed <= MAX_SEED:", "        if False:",
        [T + "config/test_integer_bounds.py::"
         "test_the_seed_is_refused_outside_numpys_range_with_the_range"]),
    # --eval building the training reader: a folder of the eval file alone refused.
    Mutation(
        "eval_reads_the_training_split", At("Trainer._make_input"),
        "            train=not self.params.eval)", "            train=True)",
        [T + "state/test_eval_split_only.py"]),
    # The guards' arming on the default settings: the divergence guard left
    # out of a default run, the automatic watchdog made "off", the peer watch
    # never started.
    Mutation(
        "default_run_without_divergence_guard", At("default_callbacks"),
        "                 DivergenceGuard(handles.learning_rate, dynamic_loss_scale=dynamic,\n"
        "                                 loss_probe=handles.loss_probe),\n", "",
        [T + "engine/test_guard_arming.py::"
         "test_a_default_run_arms_its_guards_from_the_first_step"]),
    Mutation(
        "default_watchdog_off", At("_watchdog", module="callbacks"),
        "    return StepWatchdog(plan.runtime.step_timeout_secs,",
        "    return StepWatchdog(plan.runtime.step_timeout_secs or 0,",
        [T + "engine/test_guard_arming.py::"
         "test_a_default_run_arms_its_guards_from_the_first_step"]),
    Mutation(
        "peer_watch_never_started", At("start", module="peer_watch"),
        "    if cluster.num_workers < 2 or _WATCH[\"current\"] is not None:\n",
        "    if True:\n",
        [T + "cluster/test_peer_watch.py::"
         "test_with_the_default_timeout_a_dead_peer_is_given_up"]),
    # The families' own tests: a new guard, and a new precision-only branch
    # that no run takes, each written into the product, fail them.
    Mutation(
        "new_guard_without_arming_tests", At("OTHER_WORKER"),
        'OTHER_WORKER = "a stop request from another worker"\n',
        'OTHER_WORKER = "a stop request from another worker"\n\n\n'
        "class QuotaStop:\n    def after_step(self, step, result, seconds):\n"
        "        self.loop.request_stop('quota')\n",
        [T + "engine/test_guard_arming.py::"
         "test_every_guard_names_its_tests_on_default_settings_and_in_warm_up"]),
    Mutation(
        "new_precision_branch_no_run_takes", At("check", module="native_precision"),
        "    dtype = precision.half\n",
        "    dtype = precision.half\n"
        "    if getattr(precision, \"use_fp8\", False) and precision.use_fp16:\n"
        "        dtype = \"float8\"\n",
        [T + "recipe/test_precision_branches.py::"
         "test_every_precision_only_branch_is_taken_on_a_model_with_and_without_batch_norm"]),
    # Generated-mutant survivor of gpu_share.py: GPUs left over refused too.
    Mutation(
        "gpu_share_refuses_gpus_left_over", At("share", module="gpu_share"),
        "    if need > len(gpus):\n", "    if need != len(gpus):\n",
        [T + "cluster/test_gpu_share.py::test_gpus_left_over_are_no_refusal"]),
    # What a multi-worker eval reports: the cluster's images/sec averaged
    # instead of summed, top-5 reported as top-1, every worker scoring the
    # whole split.
    Mutation(
        "cluster_eval_images_per_sec_averaged", At("ClusterEvaluator.evaluate"),
        "float(total[3])", "float(total[3]) / self.num_workers",
        [T + "cluster/test_cluster_eval.py::"
         "test_the_numbers_three_workers_report_are_the_whole_splits"]),
    Mutation(
        "cluster_eval_top5_reported_as_top1", At("ClusterEvaluator.evaluate"),
        "Tally(correct1, correct5, count,", "Tally(correct1, correct1, count,",
        [T + "cluster/test_cluster_eval.py::"
         "test_the_numbers_three_workers_report_are_the_whole_splits"]),
    Mutation(
        "cluster_eval_share_is_the_whole_split", At("share_of", module="cluster_eval"),
        "eval_data.dataset.shard(num_workers, task_index)", "eval_data.dataset",
        [T + "cluster/test_cluster_eval.py::"
         "test_the_numbers_three_workers_report_are_the_whole_splits"]),
    # Half-precision multi-worker: a step reports its worker's examples, not
    # the cluster's (the images/sec line's numerator).
    Mutation(
        "half_precision_reports_the_workers_examples", At("TrainStep._decide"),
        "            count, stops = update.count, counts.stops\n",
        "            count, stops = counts.local, counts.stops\n",
        [T + "engine/test_multiworker.py::"
         "test_one_workers_stop_request_reaches_every_workers_decision_in_every_precision"]),
    # The watchdog's limit boundary: a step ended at exactly the limit.
    Mutation(
        "watchdog_fires_at_the_limit", At("Watchdog._watch"),
        "            if ran > limit:\n", "            if ran >= limit:\n",
        [T + "callbacks/test_step_watchdog.py::"
         "test_a_step_is_ended_only_once_it_has_run_past_the_limit"]),
    # The straggler report: the delay's kind swapped; every worker's timing in
    # task 0's slots (the wrong task named); the threshold ignored (clean
    # windows name a worker).
    Mutation(
        "straggler_kind_swapped", At("StragglerReport._report"),
        "        if more_wait >= more_compute:", "        if more_wait < more_compute:",
        [T + "cluster/test_straggler_report.py"]),
    Mutation(
        "straggler_timing_in_task_0_slots", At("timing_values"),
        "                out.append(tf.pad(pair, [[2 * task_index, 2 * (num_workers - task_index - 1)]]))",
        "                out.append(tf.pad(pair, [[0, 2 * (num_workers - 1)]]))",
        [T + "cluster/test_straggler_report.py"]),
    Mutation(
        "straggler_threshold_ignored", At("StragglerReport._report"),
        "        if late <= max(self.threshold * step, MIN_LATE_SECONDS):",
        "        if late <= 0:",
        [T + "cluster/test_straggler_report.py"]),
    # The start-up broadcast summed in the all-device group whatever the spec:
    # every GPU of a */xring or scatter/xring run holds an NCCL communicator
    # its step never uses; or it runs before the opener makes its groups.
    Mutation(
        "broadcast_in_the_all_device_group", At("ClusterExchange.packed_sum"),
        "            lambda k, flats: self._spec_sum(flats, key + k), check=False).per_device",
        "            lambda k, flats: self._all_devices_sum(flats, key + k), check=False).per_device",
        [T + "engine/test_startup_broadcast_groups.py::"
         "test_the_start_up_broadcast_uses_only_the_step_s_groups"]),
    Mutation(
        "broadcast_before_the_groups_open", At("ClusterExchange.start"),
        "        self.opener = self.build_opener()\n        if self.opener is not None:\n"
        "            self.opener()\n        broadcast = self.build_broadcast(copies)\n"
        "        if broadcast is not None:\n            broadcast()",
        "        broadcast = self.build_broadcast(copies)\n        if broadcast is not None:\n"
        "            broadcast()\n        self.opener = self.build_opener()\n"
        "        if self.opener is not None:\n            self.opener()",
        [T + "engine/test_startup_broadcast_groups.py::"
         "test_the_groups_are_opened_before_the_broadcast_uses_them"]),
    # A resume from an earlier checkpoint saving over the later ones.
    Mutation(
        "branch_overwrites_later_checkpoints", At("check_no_later_checkpoints"),
        "    if not later:\n        return", "    if True:\n        return",
        [T + "state/test_resume_branch.py",
         T + "commands/test_newcomer_errors.py::test_the_errors_page_says_what_the_code_says"]),
    # The proof's processes without a shared CUDA cache at its largest: each
    # would JIT-compile TensorFlow's kernels again on an H100.
    Mutation(
        "gpu_proof_cuda_cache_left_small", File("bench/gpu_proof_jit.py"),
        '    environ.setdefault("CUDA_CACHE_MAXSIZE", CACHE_MAXSIZE)\n', "",
        [T + "package/test_gpu_proof.py::"
         "test_the_proofs_processes_share_one_cuda_cache_at_its_largest"]),
    # No warm-up before the rows: the first rows pay the JIT.
    Mutation(
        "gpu_proof_no_warm_up", File("bench/gpu_proof.py"),
        "        if args.warmup_s > 0:", "        if False:",
        [T + "package/test_gpu_proof.py::"
         "test_the_warm_up_runs_its_rows_once_before_any_row_and_says_so"]),
    # A resume on another topology whose recipe rate changed, said nowhere.
    Mutation(
        "learning_rate_change_unsaid", At("learning_rate_change"),
        '    if [float(v) for v in recorded["values"]] == entry["values"]:', "    if True:",
        [T + "state/test_resume_learning_rate.py::"
         "test_two_replicated_devices_to_one_or_to_parameter_server_is_a_changed_rate"]),
    Mutation(
        "continues_exactly_whatever_the_rate", At("RecordedTopology.header_info"),
        "            if rate_changed:", "            if False:",
        [T + "state/test_resume_learning_rate.py::test_continues_exactly_only_with_the_same_rate"]),
    # Probabilities recognized by a softmax layer's spelling only: a softmax
    # inside call() (or a Lambda) trains as logits.
    Mutation(
        "probabilities_by_spelling_only", At("check_not_probabilities"),
        "    if traced is None or not num_classes or num_classes < 2:", "    if True:",
        [T + "engine/test_keras_model_use.py::"
         "test_a_model_emitting_probabilities_is_refused_whatever_makes_them"]),
    # Generated-mutant survivor of watchdog.py: --step_timeout_secs=0 (off)
    # starts a watch on the automatic limit.
    Mutation(
        "watchdog_zero_timeout_watches", At("Watchdog.started"),
        "        if self.timeout == 0:\n", "        if self.timeout == -1:\n",
        [T + "callbacks/test_step_watchdog.py::test_a_step_timeout_of_0_starts_no_watch"]),
    # The elastic launch: the survivors started again as many as before (the
    # lost worker's slot refilled at once); a worker count the global batch
    # cannot be cut over let through.
    Mutation(
        "elastic_restarts_every_worker", At("ElasticRun._loop"),
        "            self.count = left", "            self.count = count",
        [T + "cluster/test_elastic_launch.py::"
         "test_a_worker_back_waits_for_the_next_periodic_checkpoint_then_one_more_goes_on",
         T + "cluster/test_elastic_launch.py::"
         "test_a_lost_worker_and_one_taken_back_at_a_checkpoint_are_said_and_recorded"]),
    # A worker back taken in on demand (SIGTERM's stop at the next step)
    # though periodic checkpoints are set; a run that reached its end
    # started again for the waiting worker; the chief signalled before its
    # handlers are set (SIGUSR1 would kill it).
    Mutation(
        "elastic_take_back_on_demand", At("ElasticRun._ask_for_stop"),
        "                signal.SIGUSR1 if self.save_steps else signal.SIGTERM)",
        "                signal.SIGTERM)",
        [T + "cluster/test_elastic_launch.py::"
         "test_a_worker_back_waits_for_the_next_periodic_checkpoint_then_one_more_goes_on",
         T + "cluster/test_elastic_launch.py::"
         "test_a_lost_worker_and_one_taken_back_at_a_checkpoint_are_said_and_recorded"]),
    # A resumed worker's input starts a step early (that step's examples
    # trained twice; the run changed by hand would repeat it too).
    Mutation(
        "resumed_input_repeats_a_step", At("FeedPosition.start"),
        "            self.input.resume_after(self.position(start_step))",
        "            self.input.resume_after(self.position(max(start_step - 1, 0)))",
        [T + "cluster/test_elastic_launch.py::"
         "test_every_example_is_trained_once_by_the_workers_of_its_step"]),
    Mutation(
        "elastic_finished_run_started_again", At("ElasticRun._loop"),
        "                if finished is not None:\n", "                if False:\n",
        [T + "cluster/test_elastic_launch.py::"
         "test_a_run_that_ends_before_the_checkpoint_is_not_started_again"]),
    Mutation(
        "elastic_chief_signalled_before_it_trains", At("Workers.signal_chief_once_it_trains"),
        "            if not self._chief_trains:\n", "            if False:\n",
        [T + "cluster/test_elastic_launch.py::"
         "test_the_chief_gets_the_stop_request_only_once_it_trains"]),
    Mutation(
        "elastic_count_not_checked", At("global_batch_refusal"),
        "    except (ParamsError, ValueError) as err:\n        return str(err)",
        "    except (ParamsError, ValueError) as err:\n        return None",
        [T + "cluster/test_elastic_launch.py::"
         "test_a_worker_count_the_global_batch_cannot_be_cut_over_is_refused_with_the_reason"]),
    # A resume that changes --distortions (a compared setting), said nowhere.
    Mutation(
        "compared_setting_change_unsaid", At("compared_changes"),
        "    if not changed:\n        return []", "    if True:\n        return []",
        [T + "state/test_trajectory_settings.py::"
         "test_a_changed_compared_setting_is_one_changed_line_naming_each",
         T + "state/test_trajectory_settings.py::test_a_resume_without_distortions_says_so"]),
    # Generated-mutant survivor of the resume agreement: a worker without
    # --train_dir described as one whose folder holds no checkpoint.
    Mutation(
        "agreement_no_train_dir_read_as_a_folder", At("fingerprint", module="agreement"),
        "        return [1.0 if train_dir else 0.0, -1.0, 0.0]\n",
        "        return [1.0 if train_dir else 1.0, -1.0, 0.0]\n",
        [T + "state/test_resume_agreement.py::test_a_worker_without_train_dir_is_named_as_such"]),
    # Generated-mutant survivor of flow.py: only the first pack's check decides.
    Mutation(
        "only_the_first_packs_check_decides", At("exchange_packs"),
        "flags[0] if len(flags) == 1 else", "flags[0] if len(flags) >= 1 else",
        [T + "engine/test_exchange_riders.py::"
         "test_a_non_finite_sum_in_any_pack_but_the_first_is_seen"]),
    # Without a run record, a checkpoint resumed under an optimizer whose
    # slots it does not hold (sgd's none under adam), no word.
    Mutation(
        "checkpoint_slots_not_a_witness", At("check_optimizer_witness"),
        "    if saved == set(slot_names):", "    if True:",
        [T + "state/test_resume_witness.py",
         T + "commands/test_newcomer_errors.py::test_the_errors_page_says_what_the_code_says"]),
    # --fp16_vars' header says its variables are float32.
    Mutation(
        "fp16_vars_header_says_float32_variables", At("header_info", module="precision"),
        '    if name == "float16":  # --fp16_vars', '    if False:  # --fp16_vars',
        [T + "recipe/test_fp16_vars.py::test_the_header_says_which_variables_are_float16"]),
    # A dropout model's int64 seed states synchronized with the batch-norm
    # statistics: the statistics leave pack 0 for collectives of their own.
    Mutation(
        "seed_states_synchronized", At("CollectiveManager._synchronized"),
        "        return [j for j in range(len(values)) if j not in self._seed_states]",
        "        return list(range(len(values)))",
        [T + "engine/test_multiworker.py::"
         "test_dropout_with_batch_norm_runs_no_collective_but_the_packs"]),
    # Across workers, --compact_gradient_transfer ignored (packs sent in float32).
    Mutation(
        "half_wire_ignored_across_workers", At("ClusterExchange.exchange"),
        "        half = self.wire_dtype\n", "        half = None\n",
        [T + "engine/test_multiworker.py::"
         "test_half_precision_on_the_wire_two_workers_equal_one_process_with_two_devices",
         T + "engine/test_multiworker.py::"
         "test_a_float16_sum_that_overflows_is_skipped_on_every_worker"]),
    # --sync_batch_norm across workers: each worker's moments summed on the worker only.
    Mutation(
        "sync_batch_norm_moments_stay_on_the_worker", At("Lockstep.all_sum"),
        "                    if self.across is not None:\n",
        "                    if False:\n",
        [T + "engine/test_multiworker.py::"
         "test_sync_batch_norm_across_workers_equals_one_process"]),
    # Its gradient not summed over the workers (each worker's loss alone).
    Mutation(
        "sync_batch_norm_gradient_stays_on_the_worker", At("ClusterExchange.lockstep_sum"),
        "            return across(vector, key), lambda upstream: across(upstream, key + 1)\n",
        "            return across(vector, key), lambda upstream: upstream\n",
        [T + "engine/test_multiworker.py::"
         "test_sync_batch_norm_across_workers_equals_one_process"]),
    # The straggler report names a worker at any lateness over 5 ms,
    # whatever --straggler_threshold says.
    Mutation(
        "straggler_threshold_not_read", At("StragglerReport._report"),
        "if late <= max(self.threshold * step, MIN_LATE_SECONDS):",
        "if late <= MIN_LATE_SECONDS:",
        [T + "callbacks/test_straggler_threshold.py"]),
    # The header's packs named in the gradients' dtype under a half-precision transfer.
    Mutation(
        "pack_line_ignores_the_wire_dtype", At("describe", module="packing"),
        "        sent = wire if wire is not None and dtype.is_floating and dtype != wire else dtype\n",
        "        sent = dtype\n",
        [T + "engine/test_repacking.py::test_describe_names_the_dtype_on_the_wire"]),
    Mutation(
        "header_passes_no_wire_dtype", At("wire_dtype", module="header"),
        "    return plan.exchange.compact_transfer_dtype if cast else None\n",
        "    return None\n",
        [T + "config/test_exchange_checks.py::test_the_header_sizes_packs_in_the_dtype_on_the_wire"]),
    # Generated-mutant survivor of the resume agreement: its collective's
    # instance key inside the last model's key space (the workers' group is
    # shared with the step's count collective).
    Mutation(
        "agreement_key_inside_a_key_space", At("INSTANCE_KEY", module="agreement"),
        "KEY_SPACES * KEY_SPACE_SIZE + 1000", "KEY_SPACES * KEY_SPACE_SIZE - 1000",
        [T + "state/test_resume_agreement.py::"
         "test_the_collective_s_key_is_clear_of_every_model_s_key_space"]),
    # Generated-mutant survivors of the resume agreement: two workers never
    # compared (only three were tested), and a ckpt-0 named as no checkpoint.
    Mutation(
        "agreement_skipped_for_two_workers", At("agree", module="agreement"),
        "    if cluster.num_workers == 1:\n", "    if cluster.num_workers == 2:\n",
        [T + "state/test_resume_agreement.py::"
         "test_two_workers_on_different_checkpoints_are_refused"]),
    Mutation(
        "agreement_ckpt_0_named_as_none", At("describe", module="agreement"),
        "    if step < 0:\n", "    if step < 1:\n",
        [T + "state/test_resume_agreement.py::"
         "test_two_workers_on_different_checkpoints_are_refused"]),
    # A hung step's watchdog line names the tasks that never reached its
    # exchange: no mark left, another task's phase misread, an earlier step's
    # or an earlier run's mark taken for this step's, the watch not given the
    # cluster, the marks not under --train_dir, the firing task leaving none.
    Mutation(
        "exchange_marks_never_left", At("Watchdog._watch"),
        "            if self.marks is not None and ran > MARK_SHARE * limit and "
        "self._mark_may_move():\n",
        "            if False:\n",
        [T + "cluster/test_hung_exchange.py",
         T + "callbacks/test_hung_exchange_marks.py::"
         "test_a_step_past_half_the_limit_leaves_its_mark_and_a_run_starts_without_an_old_one"]),
    Mutation(
        "exchange_marks_reached_read_as_missed", At("ExchangeMarks.describe"),
        "            elif mark[2]:\n", "            elif not mark[2]:\n",
        [T + "callbacks/test_hung_exchange_marks.py"]),
    Mutation(
        "exchange_marks_towers_read_as_reached", At("_read_phase"),
        'read["value"] != TOWERS)', "True)",
        [T + "cluster/test_hung_exchange.py"]),
    Mutation(
        "exchange_marks_earlier_step_taken", At("ExchangeMarks.describe"),
        "            elif mark[0] != step:\n", "            elif False:\n",
        [T + "callbacks/test_hung_exchange_marks.py::"
         "test_the_line_names_who_never_reached_the_exchange_who_left_no_mark_and_who_did"]),
    Mutation(
        "exchange_marks_earlier_run_kept", At("Watchdog.started"),
        "                self.marks.clear()  # a run before this one's\n",
        "                pass\n",
        [T + "callbacks/test_hung_exchange_marks.py::"
         "test_a_step_past_half_the_limit_leaves_its_mark_and_a_run_starts_without_an_old_one"]),
    Mutation(
        "exchange_marks_not_given_to_the_watch", At("_watchdog", module="callbacks"),
        ", cluster=plan.topology.cluster)", ")",
        [T + "cluster/test_hung_exchange.py"]),
    Mutation(
        "exchange_marks_not_under_the_train_dir", At("folder_for"),
        '    if train_dir and "://" not in str(train_dir):\n', "    if False:\n",
        [T + "cluster/test_hung_exchange.py",
         T + "callbacks/test_hung_exchange_marks.py::"
         "test_the_marks_are_in_the_train_dir_else_a_temp_folder_of_the_cluster"]),
    Mutation(
        "exchange_marks_firing_task_leaves_none", At("Watchdog.message"),
        "            self._leave_mark(phase)  # for the others whose watch fires later\n", "",
        [T + "callbacks/test_hung_exchange_marks.py::"
         "test_the_line_names_who_never_reached_the_exchange_who_left_no_mark_and_who_did"]),
    # --gradient_pack_mb=auto: a slower size taken as a gain.
    Mutation(
        "pack_tuning_takes_the_slower", At("beats"),
        "challenger * (1 + PICK_MARGIN) < incumbent", "challenger > incumbent * (1 + PICK_MARGIN)",
        [PACK_TUNING + "test_the_candidates_run_in_turn_while_each_gains_on_the_one_before",
         PACK_TUNING + "test_a_smaller_size_replaces_the_larger_only_for_a_gain_above_the_margin",
         PACK_TUNING + "test_the_header_the_pick_line_and_the_run_record_name_the_pick"]),
    # Each worker decides from its own times (no collective): decisions may differ.
    Mutation(
        "pack_tuning_times_not_agreed_across_workers", At("PackTuning._compare"),
        'self._cluster_max(\n            [min(self._mine[index - 1]), min(self._mine[index])], "pack_timings")',
        "[min(self._mine[index - 1]), min(self._mine[index])]",
        [PACK_TUNING + "test_each_comparison_takes_both_candidates_slowest_worker",
         T + "engine/test_pack_tuning_workers.py::"
         "test_two_workers_take_one_pick_from_the_same_numbers"]),
    # A candidate's first step, which builds its step function, timed too.
    Mutation(
        "pack_tuning_times_the_building_steps", At("PackTuning.run_step"),
        "        if position:", "        if True:",
        [PACK_TUNING + "test_the_candidates_run_in_turn_while_each_gains_on_the_one_before"]),
    # Every candidate timed: the first size without a gain does not end it.
    Mutation(
        "pack_tuning_times_past_the_first_non_gain", At("PackTuning._compare"),
        "        if gained and index < len(self.candidates) - 1:",
        "        if index < len(self.candidates) - 1:",
        [PACK_TUNING + "test_the_first_size_without_a_gain_ends_the_timing_unbuilt_sizes_left"]),
    # The pick after a non-gain is the size that did not gain.
    Mutation(
        "pack_tuning_takes_the_size_without_a_gain", At("PackTuning._compare"),
        "self.candidates[index if gained else index - 1]", "self.candidates[index]",
        [PACK_TUNING + "test_the_first_size_without_a_gain_ends_the_timing_unbuilt_sizes_left",
         PACK_TUNING + "test_a_later_size_that_stops_gaining_leaves_the_one_before_it"]),
    # The comparison against the first candidate rather than the one before.
    Mutation(
        "pack_tuning_compares_with_the_first", At("PackTuning._compare"),
        "[min(self._mine[index - 1]), min(self._mine[index])]",
        "[min(self._mine[0]), min(self._mine[index])]",
        [PACK_TUNING + "test_a_later_size_that_stops_gaining_leaves_the_one_before_it"]),
    # Sizes that cut the same plan timed twice.
    Mutation(
        "pack_tuning_duplicate_candidates", At("candidates", module="pack_tuning"),
        "        if counts not in plans:\n", "        if True:\n",
        [PACK_TUNING + "test_candidates_are_the_sizes_that_cut_distinct_plans"]),
    # A resume times again instead of taking the recorded pick.
    Mutation(
        "pack_tuning_resume_ignores_the_recorded_pick", At("_resume_chief"),
        '    resumed.pack_pick = kept.get(run_record.PACK_PICK, {}).get("pack_mb")\n',
        "    resumed.pack_pick = None\n",
        [PACK_TUNING + "test_a_resume_trains_on_the_recorded_pick_without_timing"]),
    Mutation(
        "pack_tuning_start_ignores_the_resume", At("PackTuning.start"),
        "        if resumed:\n", "        if False:\n",
        [PACK_TUNING + "test_a_resume_takes_the_chiefs_recorded_pick",
         PACK_TUNING + "test_a_resume_trains_on_the_recorded_pick_without_timing"]),
    # The resume's rewritten run record drops the pick.
    Mutation(
        "pack_tuning_record_forgets_the_pick_at_resume", At("_resume_chief"),
        "        input_record=input_record, compared=compared, pack_pick=kept,",
        "        input_record=input_record, compared=compared, pack_pick=None,",
        [PACK_TUNING + "test_a_resume_trains_on_the_recorded_pick_without_timing"]),
    # The trainer never switches its step to a candidate or the pick.
    Mutation(
        "pack_tuning_step_never_switched", At("Trainer._use_pack_size"),
        "        if pack_bytes != current:\n", "        if False:\n",
        [PACK_TUNING + "test_a_resume_trains_on_the_recorded_pick_without_timing"]),
    # "auto" not accepted by the flag.
    Mutation(
        "pack_size_flag_refuses_auto", At("NumberOrWordParser.parse"),
        "argument.strip() in self.words", "argument.strip() in ()",
        [T + "config/test_refusal_table.py::test_the_neighbours_of_a_refusal_are_accepted"]),
    # Generated-mutant survivor of flow.py: every device's summed lists at
    # once (LocalExchange.reduce, the cross-worker start-up sums) empty.
    Mutation(
        "exchanged_per_device_empty", At("Exchanged.per_device"),
        "        for d, flat in enumerate(self.flats):\n", "        for d, flat in []:\n",
        [T + "engine/test_exchange_riders.py::"
         "test_a_half_precision_transfer_sends_the_extra_values_apart"]),
    # --sync_batch_norm: a tower whose slice is empty at run time runs its
    # forward pass on the empty batch (oneDNN's conv passes it through
    # unshaped: the moments' sums and collectives part in shape).
    Mutation(
        "sync_batch_norm_empty_tower_runs_empty", At("_at_least_one_example"),
        "    padded = tf.cond(examples > 0, lambda: images, one_zero_example)\n",
        "    padded = images\n",
        [T + "engine/test_sync_batch_norm.py::"
         "test_a_slice_empty_at_run_time_runs_on_a_stand_in_that_counts_nothing",
         T + "engine/test_multiworker.py::"
         "test_sync_batch_norm_across_workers_equals_one_process"]),
    # The empty tower's stand-in example counted in the batch-norm moments.
    Mutation(
        "sync_batch_norm_stand_in_counted", At("moments"),
        "        local = [value * member.present for value in local]\n",
        "        local = list(local)\n",
        [T + "engine/test_sync_batch_norm.py::"
         "test_a_slice_empty_at_run_time_runs_on_a_stand_in_that_counts_nothing"]),
    # The stand-in's outputs kept for the loss.
    Mutation(
        "sync_batch_norm_stand_in_outputs_kept", At("forward"),
        "        outputs = tf.nest.map_structure(lambda t: t[:examples], outputs)\n",
        "        outputs = outputs\n",
        [T + "engine/test_sync_batch_norm.py::"
         "test_a_slice_empty_at_run_time_runs_on_a_stand_in_that_counts_nothing"]),
    # A resume that changes the wire's dtype only said in the header, not refused.
    Mutation(
        "wire_dtype_change_not_refused_at_resume",
        At("ExchangeSettings.compact_transfer_dtype"),
        'applies_with=("compact_gradient_transfer", (True,)), recorded=WHEN_APPLIES)',
        'applies_with=("compact_gradient_transfer", (True,)), recorded=COMPARED)',
        [T + "state/test_resume_settings.py::"
         "test_a_resume_that_changes_the_wire_precision_is_refused",
         T + "state/test_record_fields.py::test_each_state_setting_changed_alone_is_refused"]),
    # ... and turning the half-precision wire off.
    Mutation(
        "wire_off_not_refused_at_resume", At("ExchangeSettings.compact_gradient_transfer"),
        "        recorded=ALWAYS)", "        recorded=COMPARED)",
        [T + "state/test_resume_settings.py::"
         "test_a_resume_that_changes_the_wire_precision_is_refused",
         T + "state/test_record_fields.py::test_each_state_setting_changed_alone_is_refused"]),
    # --compact_transfer_dtype ignored: every compact wire float16.
    Mutation(
        "compact_transfer_dtype_ignored", At("compact_dtype"),
        '    return p.compact_transfer_dtype or half or "float16"',
        '    return half or "float16"',
        [T + "recipe/test_compact_transfer_long.py"]),
    # Half precision on the wire ignored in one process (float32 packs).
    Mutation(
        "compact_wire_ignored_in_one_process", At("compact_dtype"),
        "    if not p.compact_gradient_transfer:\n        return None\n",
        "    return None\n",
        [T + "recipe/test_compact_transfer_long.py"]),
    # Generated-mutant survivor of flow.py: with exactly two packs only the
    # first one's check decides (the tests had three).
    Mutation(
        "two_packs_only_the_first_checked", At("exchange_packs"),
        "flags[0] if len(flags) == 1 else", "flags[0] if len(flags) == 2 else",
        [T + "engine/test_exchange_riders.py::"
         "test_a_non_finite_sum_in_any_pack_but_the_first_is_seen"]),
    # The straggler report's window medians never reach the summaries, or
    # reach them as each other's curves.
    Mutation(
        "straggler_windows_not_summarized", At("default_callbacks"),
        "on_window=summaries and summaries.extra_scalars", "on_window=None",
        [T + "cluster/test_straggler_report.py"]),
    Mutation(
        "straggler_window_scalars_swapped", At("window_scalars"),
        "zip(reach, wait)", "zip(wait, reach)",
        [T + "callbacks/test_straggler_threshold.py"]),
    # A task's C++ logs reach the terminal when its server cannot start.
    Mutation(
        "worker_log_diverted_after_the_server_starts", At("join", module="joining"),
        "            before_server(cluster)\n", "            pass\n",
        [T + "cluster/test_cluster_sources.py::test_a_port_in_use_is_one_line_naming_it"]),
    # A setting's readers ask its section: the section answering wrongly.
    Mutation(
        "summaries_need_verbosity_2", At("Observe.summaries_on"),
        "        return self.summary_verbosity >= 1\n",
        "        return self.summary_verbosity >= 2\n",
        [T + "callbacks/test_summaries.py::"
         "test_verbosity_1_writes_every_scalar_on_the_grid_and_eval_under_eval"]),
    Mutation(
        "collective_local_algorithm_is_the_whole_spec", At("Exchange.local_algorithm"),
        "            return split_spec(self.all_reduce_spec)[0]\n",
        "            return self.all_reduce_spec\n",
        [T + "engine/test_nccl_library.py::"
         "test_an_exchange_through_nccl_without_the_library_is_refused"]),
    Mutation(
        "launcher_towers_default_not_the_declared_one", At("Devices.towers_in_flags"),
        "int(text) if text else cls().tower_count()", "int(text) if text else 2",
        [T + "commands/test_launch_towers.py"]),
    # The engine's functions are traced without AutoGraph; a user's loss is converted.
    Mutation(
        "user_loss_not_converted_in_the_step", At("call_loss"),
        "    return _converted_call()(loss_fn, labels, outputs)\n",
        "    return loss_fn(labels, outputs)\n",
        [T + "engine/test_user_loss_control_flow.py"]),
    Mutation(
        "user_loss_not_converted_in_forward_only", At("ForwardStep._step"),
        "tower.call_loss(self.loss_fn, labels, logits)", "self.loss_fn(labels, logits)",
        [T + "engine/test_user_loss_control_flow.py::"
         "test_the_forward_only_benchmark_takes_a_loss_branching_in_python"]),
    # The pack pick keeps the larger packs within the margin.
    Mutation(
        "pack_pick_margin_inclusive", At("beats"),
        "challenger * (1 + PICK_MARGIN) < incumbent", "challenger * (1 + PICK_MARGIN) <= incumbent",
        [PACK_TUNING + "test_a_smaller_size_replaces_the_larger_only_for_a_gain_above_the_margin"]),
    Mutation(
        "pack_pick_without_margin", At("beats"),
        "challenger * (1 + PICK_MARGIN) < incumbent", "challenger < incumbent",
        [PACK_TUNING + "test_a_later_size_that_stops_gaining_leaves_the_one_before_it"]),
    # The step watchdog's callback: what counts toward the automatic limit
    # without warm-up, and who leaves exchange marks.
    Mutation(
        "step_watchdog_counts_the_tracing_step", At("StepWatchdog.after_step"),
        "max(self.warmup, 1)", "max(self.warmup, 0)",
        [T + "callbacks/test_step_watchdog.py::"
         "test_without_warm_up_the_first_step_traces_and_the_second_is_the_first_counted"]),
    Mutation(
        "step_watchdog_skips_the_second_step", At("StepWatchdog.after_step"),
        "max(self.warmup, 1)", "max(self.warmup, 2)",
        [T + "callbacks/test_step_watchdog.py::"
         "test_without_warm_up_the_first_step_traces_and_the_second_is_the_first_counted"]),
    Mutation(
        "step_watchdog_marks_for_one_worker", At("StepWatchdog.__init__"),
        "cluster.num_workers > 1", "cluster.num_workers >= 1",
        [T + "callbacks/test_step_watchdog.py::test_only_a_multi_worker_run_leaves_exchange_marks"]),
    Mutation(
        "step_watchdog_marks_from_three_workers", At("StepWatchdog.__init__"),
        "cluster.num_workers > 1", "cluster.num_workers > 2",
        [T + "callbacks/test_step_watchdog.py::test_only_a_multi_worker_run_leaves_exchange_marks"]),
    # What a phase says of the step's exchange, and when a mark is read again.
    Mutation(
        "watchdog_start_reached_the_exchange", At("_read_phase"),
        "\"its step's start\", False", "\"its step's start\", True",
        [T + "callbacks/test_hung_exchange_marks.py::"
         "test_each_phase_says_whether_the_step_reached_its_exchange"]),
    Mutation(
        "watchdog_device_sync_not_past_the_exchange", At("_read_phase"),
        "name == DEVICE_SYNC", "name > DEVICE_SYNC",
        [T + "callbacks/test_hung_exchange_marks.py::"
         "test_each_phase_says_whether_the_step_reached_its_exchange"]),
    Mutation(
        "watchdog_towers_reached_the_exchange", At("_read_phase"),
        'read["value"] != TOWERS', 'read["value"] <= TOWERS',
        [T + "callbacks/test_hung_exchange_marks.py::"
         "test_each_phase_says_whether_the_step_reached_its_exchange"]),
    Mutation(
        "watchdog_mark_moves_only_once_reached", At("Watchdog._mark_may_move"),
        "not (reached or words == UNREAD_MARK)", "(reached or words == UNREAD_MARK)",
        [T + "callbacks/test_hung_exchange_marks.py::"
         "test_a_mark_is_read_again_until_it_reached_the_exchange_or_could_not_be_read"]),
    Mutation(
        "watchdog_towers_phase_is_the_variables_start", Module("engine.run.watchdog"),
        "TOWERS, EXCHANGE, UPDATE = 1, 2, 3", "TOWERS, EXCHANGE, UPDATE = 0, 2, 3",
        [T + "callbacks/test_hung_exchange_marks.py::"
         "test_a_phase_variable_not_yet_set_reads_as_unread_not_as_the_towers"]),
    Mutation(
        "watchdog_close_keeps_a_watched_runs_mark", At("Watchdog.close"),
        "self._thread is not None", "self._thread is None",
        [T + "callbacks/test_hung_exchange_marks.py::""test_a_watched_run_leaves_no_mark_behind_when_it_closes"]),
    Mutation(
        "watchdog_poll_not_a_tenth_of_the_limit", At("Watchdog.__init__"),
        "min(1.0, timeout / 10)", "min(1.0, timeout - 10)",
        [T + "callbacks/test_hung_exchange_marks.py::"
         "test_an_explicit_limit_is_checked_within_a_tenth_of_it_at_most_every_second"]),
    # The launcher never reads a survivor's lost-peer line: it waits out the
    # survivors' linger (or the grace) instead of ending it.
    Mutation(
        "launcher_waits_out_the_survivors_linger", At("Workers._copy"),
        "self._said.add(task)", "pass",
        [T + "cluster/test_launch.py::"
         "test_survivors_that_said_their_line_stop_waiting_once_all_have"]),
    # Survivors stopped while they waited counted by their SIGKILL: lost.
    Mutation(
        "launcher_counts_stopped_survivors_as_lost", At("Workers.statuses"),
        "peer_loss.EXIT_STATUS if task in self._ended else", "",
        [T + "cluster/test_launch.py::"
         "test_an_elastic_launch_counts_the_survivors_it_stopped_waiting_as_survivors"]),
    # Every survivor's linger ended, even one that has not said its line yet.
    Mutation(
        "launcher_ends_a_linger_before_the_line", At("Workers._only_waiting"),
        "if not running <= self._said:", "if False:",
        [T + "cluster/test_launch.py::"
         "test_survivors_that_said_their_line_stop_waiting_once_all_have"]),
    # Survivors leave 2 s after their line: one that says its line later
    # names the survivors that left as lost too.
    Mutation(
        "survivors_linger_too_briefly", Module("engine.distributed.peer_loss"),
        "LINGER_SECS = 10.0", "LINGER_SECS = 2.0",
        [T + "cluster/test_lost_peer_line.py"]),
    # A mark short of the step function (its input) never read again.
    Mutation(
        "watchdog_input_mark_kept", At("Watchdog._mark_may_move"),
        "words == UNREAD_MARK", "words <= UNREAD_MARK",
        [T + "callbacks/test_hung_exchange_marks.py::"
         "test_a_mark_is_read_again_until_it_reached_the_exchange_or_could_not_be_read"]),
    # The same mark written again at every poll.
    Mutation(
        "watchdog_unchanged_mark_rewritten", At("Watchdog._leave_mark"),
        "self._marked != (self._step, words, reached)",
        "self._marked is not (self._step, words, reached)",
        [T + "callbacks/test_hung_exchange_marks.py::"
         "test_a_mark_is_written_again_only_when_it_moved_on"]),
    # The engine's step and evaluation converted by AutoGraph again (~2 s of
    # start-up per process, nothing gained).
    Mutation(
        "train_step_converted_by_autograph", At("TrainStep.__init__"),
        "tf.function(self._train_step, autograph=False)", "tf.function(self._train_step)",
        [T + "engine/test_user_loss_control_flow.py::"
         "test_the_engine_traces_its_own_step_and_eval_without_autograph"]),
    Mutation(
        "evaluator_converted_by_autograph", At("Evaluator.__init__"),
        "tf.function(self._eval_batch, autograph=False)", "tf.function(self._eval_batch)",
        [T + "engine/test_user_loss_control_flow.py::"
         "test_the_engine_traces_its_own_step_and_eval_without_autograph"]),
    # Each candidate's step draws its own dropout masks (its seed offset by
    # the step functions built before it): the randomness then follows the
    # pack plan. A model without randomness cannot see it.
    Mutation(
        "pack_tuning_candidate_draws_its_own_masks", At("Trainer._make_step"),
        "seed=plan.recipe.seed,", "seed=plan.recipe.seed + len(getattr(self, '_built_steps', ())),",
        [PACK_TUNING + "test_with_dropout_batch_norm_and_distortions_auto_trains_to_the_bits_"
         "of_each_size"]),
]
