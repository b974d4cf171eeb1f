"""Training: the one loop (:mod:`pubench.train.loop`), checkpoints, accelerator settings,
optimizers and schedules, augmentations, metrics and the classifier helpers every
trainer shares. The units that train through it live elsewhere: pre-training frameworks
in :mod:`pubench.frameworks`, PU methods in :mod:`pubench.pu`, downstream classifiers in
:mod:`pubench.downstream`. Nothing here imports them."""
