"""A campaign: the paper tier a short GPU window at a time.

An ordered queue of cells committed with the code (:mod:`pubench.campaign.queue`,
``campaigns/paper-gpu.yaml``) is run window after window: each window plans what the store
does not hold yet (:mod:`~pubench.campaign.plan`), picks how many jobs share the device from
the preflight's memory and throughput figures (:mod:`~pubench.campaign.concurrency`), starts
only jobs that end inside the budget and stops the rest cleanly before it ends
(:mod:`~pubench.campaign.schedule`), and bundles the new records into one archive, which
``pubench campaign import`` checks and brings into the store (:mod:`~pubench.campaign.archive`).
A machine without the data or the git history gets them from ``pubench campaign pack``
(:mod:`~pubench.campaign.travel`). The commands: :mod:`~pubench.campaign.commands`.
"""
