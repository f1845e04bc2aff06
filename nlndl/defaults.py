"""Every default that more than one layer names, in one torch-free place: the CLI's options, the compiler's checks
and the runtime's configurations all read them from here, so that ``nlndl --help`` stays fast and no copy drifts."""

from __future__ import annotations

# every command
MAX_SEED = 2**63 - 1  # the largest seed: torch's generators take a signed 64-bit integer

# compiling
LAYOUTS = ("auto", "dense", "sparse")  # valuation layouts (compiler.layout); auto: sparse above 2^20 dense atoms
MAX_STEPS = 10_000  # the most forward-chaining steps a sketch or --steps may ask for
COMPILE_MEMORY = "2GiB"  # index arrays larger than this are refused (compile, check)
COMPILE_MEMORY_BYTES = 2 * 1024**3
SUBGRAPH_MIN = 2  # constants of the smallest subgraph: fewer hold no binary atom worth learning from
SUBGRAPH = "auto"  # --subgraph: auto trains on a subgraph where the whole world is large (compiler.subgraph)
SUBGRAPH_ABOVE = 2**22  # auto: past this many unpruned substitutions (or entries past SUBGRAPH_WORK), lowered whole ...
SUBGRAPH_WORK = 2**24  # ... and sampled where its index entries x steps pass this (or it is refused) ...
SUBGRAPH_TRY = 2**31  # ... or sampled at once past this many unpruned substitutions ...
SUBGRAPH_GRID = 2**18  # ... down to the constants whose grid is about this (64 constants at 3 variables) ...
SUBGRAPH_ENTRIES = 2**23  # ... or fewer, where the grid times a predicate's candidate atoms would pass this
SUBGRAPH_MOST = 64  # ... and at most this many (what 3 variables get; 1 or 2 would get hundreds more)
SUBGRAPH_DEEP = 16  # auto: recursion deeper than this many steps over forest-shaped facts trains on this many constants
SUBGRAPH_LANDMARK = 2  # ... drawn first around the constants of unary facts no more than this many (zero, nil)

# training
OUTPUT_DIR = "nlndl-out"  # where train writes when no -D is given
# restarts by the work of one forward pass (gather index entries x steps): a small program's pass costs
# little more with more restarts, a large one's nearly proportionally more, and there the first 16 draws
# already succeed
RESTART_TIERS = ((64_000, 64), (256_000, 32))
MIN_RESTARTS = 16
MAX_ITERS = 4000  # iteration limit; Addition from seeds 0-9 needs up to 3,640 (seed 2)
CLASS_WEIGHTS = ("sqrt", "balanced", "none")  # positive example weight vs a negative; the first is the default
TRAIN_MEMORY = "8GiB"  # compiling or training estimated to need more is refused (train)
TRAIN_MEMORY_BYTES = 8 * 1024**3
MAX_NOISE = 0.5  # --noise and .noise: at most half of each class may be wrong
NOISE_PATIENCE = 200  # with --noise: iterations without a better candidate before training stops
SLOW_HINT = 600.0  # seconds: a whole world whose iterations would take longer is told of --subgraph at 30 s

# knowledge graphs (kg sketch, kg train, bench kg)
KG_NEGATIVES = 2  # corrupted triples per positive
KG_VARS = 3  # variables of a learned clause
KG_TIME_LIMIT = 60.0  # seconds of training per relation at most: the clause pool stops it sooner (KG_POOL_PATIENCE)
KG_NOISE = 0.1  # accept a relation's rules wrong on at most this fraction of each class
KG_PATIENCE = MAX_ITERS  # iterations an accepted program may go unimproved: the clause pool decides instead
KG_JOBS = 0  # relations learned at once by worker processes: 0, one per core (nlndl.workers)
KG_BODY = 32  # relations a clause body reads at most: the ones whose short paths best tell positives from negatives
KG_ENTRIES = 2**26  # index entries (substitutions x candidate atoms) past which a relation is learned under prune=path
KG_COUNTED_RULES = 10_000  # counted rules of each kind (paths, with a constant) in rules.tsv per relation (all rank)
KG_PATH_LENGTH = 3  # the longest counted path rule (nlndl.paths), in body atoms: ranked beside the learned clauses
KG_POOL_PATIENCE = 400  # iterations without a new clause read out, after which a relation's training stops
# new triples of the written program's closure past which kg train does not also run it with clingo: Family's
# learned program derives 8.1 million, which nlndl computes in under a minute and clingo had not grounded after
# 28 minutes (WN18RR's 4.4 million, both in a minute or two)
KG_CHECKED_CLOSURE = 5_000_000

# LDPC decoders (nlndl ldpc train, bench ldpc)
LDPC_CODE = (48, 3, 6)  # n, variable degree, check degree of the generated regular code
LDPC_STEPS = 1500  # Adam steps
LDPC_BATCH = 64  # codewords per step
LDPC_ITERATIONS = 3  # message-passing iterations while training
