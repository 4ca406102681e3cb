"""Writes the CSV schedules in this directory with torch.distributed.pipelining.

Regenerate (CPU only; no process group is started):

    python3 -m venv /opt/torch-venv && /opt/torch-venv/bin/pip install torch
    cd schedules/testdata/torch && /opt/torch-venv/bin/python gen.py

The files were written by torch 2.15.0. Rows are written as torch's own
_dump_csv writes them (csv.writer over each rank's actions, an empty cell
for an idle step); the schedules are built on mock stages, as torch's
_schedule_visualizer.get_schedule_ops builds them. "compute_only" files hold
torch's pipeline_order; "compute_comms" files its pipeline_order_with_comms.
"""

import csv

import torch
from torch.distributed.pipelining._schedule_visualizer import get_schedule_ops

VERSION = "".join(torch.__version__.split("+")[0].split(".")[:2])  # 2.15.0 -> 215

FILES = [
    # name, torch schedule, ranks, micro-batches, stages per rank, with comms
    ("1f1b_p4_m4", "1F1B", 4, 4, None, False),  # the last row is off by one (torch's bug)
    ("1f1b_p2_m4", "1F1B", 2, 4, None, False),
    ("gpipe_p2_m4", "GPipe", 2, 4, None, False),
    ("interleaved1f1b_p2_m4", "Interleaved1F1B", 2, 4, 2, False),
    ("interleaved1f1b_p2_m4.compute_comms", "Interleaved1F1B", 2, 4, 2, True),
    ("interleavedzb_p2_m4.compute_comms", "InterleavedZeroBubble", 2, 4, 2, True),
    ("zbv_p2_m4.compute_comms", "ZBVZeroBubble", 2, 4, 2, True),
    ("dualpipev_p2_m4.compute_comms", "DualPipeV", 2, 4, 2, True),
]

for name, schedule, p, m, v, comms in FILES:
    rows = get_schedule_ops(schedule, p, m, v, with_comms=comms)
    with open(f"torch{VERSION}_{name}.csv", "w", newline="") as f:
        w = csv.writer(f)
        for row in rows:
            w.writerow(["" if a is None else a for a in row])
