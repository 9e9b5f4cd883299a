"""One module per source format. Each turns a data file's raw records into events.

An adapter has a `name`, `sniff(file, first)` (does this file look like mine? `first`
is its first JSON record, or None) and `events(file, ctx)` yielding
(line_or_record_number, event_dict) pairs whose keys are schema column names.
The pipeline fills ids, batch, source and defaults, and validates every event.
"""

from __future__ import annotations

from . import bfcl, decisionbench_run, entcollabbench, delegate52_dataset, delegate52_qa, delegate52_relay, native, taubench

# Tried in order; the first whose sniff() accepts a file reads it.
ADAPTERS = (native, delegate52_relay, delegate52_qa, delegate52_dataset, taubench, bfcl)

# Formats spread over several files: `find_groups(files, ctx)` claims groups of files and
# `group_events(group, ctx)` yields (file, line, event). Claimed files skip per-file detection.
SOURCE_ADAPTERS = (decisionbench_run, entcollabbench)

__all__ = ["ADAPTERS", "SOURCE_ADAPTERS"]
