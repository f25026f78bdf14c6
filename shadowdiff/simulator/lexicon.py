"""The words the synthetic answers are built from.

Every word here is a whole token of the simulator's vocabulary (``vocab``), so the
generated text tokenizes into word-sized tokens as a real tokenizer's output would.
``SYNONYMS`` are the near-ties: the places where a baseline's top-1 and top-2 tokens
are close, where benign drift (and a replica's rare disagreement) starts.
"""

from __future__ import annotations

ADJECTIVES = (
    "simple", "important", "useful", "common", "practical", "clear", "careful",
    "reliable", "central", "basic", "main", "natural", "general", "specific", "small",
    "large", "early", "recent", "stable", "direct", "strong", "quick", "steady",
    "typical", "broad", "narrow", "useful", "open", "complete", "careful",
)

NOUNS = (
    "process", "system", "result", "method", "factor", "pattern", "detail", "step",
    "structure", "approach", "effect", "value", "change", "source", "context",
    "balance", "signal", "measure", "resource", "outcome", "question", "problem",
    "choice", "limit", "rate", "level", "cost", "benefit", "risk", "goal", "plan",
    "idea", "record", "example", "feature", "reason", "design", "budget", "schedule",
)

# Base form and third person singular.
VERBS = (
    ("affect", "affects"), ("shape", "shapes"), ("explain", "explains"),
    ("improve", "improves"), ("support", "supports"), ("reduce", "reduces"),
    ("change", "changes"), ("define", "defines"), ("connect", "connects"),
    ("follow", "follows"), ("use", "uses"), ("show", "shows"), ("limit", "limits"),
    ("guide", "guides"), ("balance", "balances"), ("drive", "drives"),
)

UNITS = ("meters", "kilograms", "hours", "days", "dollars", "kilometers", "liters", "items")
TIME_UNITS = ("minutes", "hours", "days", "weeks", "months", "years")

# Near-ties: the first word of each group is what a baseline says; the others are
# what a slightly perturbed model (or a replica under other batching) may pick.
SYNONYMS: dict[str, tuple[str, ...]] = {
    "important": ("significant",), "significant": ("important",),
    "usually": ("typically", "generally"), "typically": ("usually",),
    "generally": ("usually",), "roughly": ("about", "approximately"),
    "about": ("roughly",), "approximately": ("roughly",), "shows": ("indicates",),
    "indicates": ("shows",), "helps": ("allows",), "allows": ("helps",),
    "large": ("big",), "big": ("large",), "small": ("minor",), "minor": ("small",),
    "main": ("primary",), "primary": ("main",), "quick": ("fast",), "fast": ("quick",),
    "simple": ("straightforward",), "straightforward": ("simple",),
    "clear": ("obvious",), "obvious": ("clear",), "common": ("frequent",),
    "frequent": ("common",), "useful": ("helpful",), "helpful": ("useful",),
    "method": ("technique",), "technique": ("method",), "result": ("outcome",),
    "outcome": ("result",), "also": ("additionally",), "additionally": ("also",),
    "however": ("but",), "often": ("frequently",), "frequently": ("often",),
    "reduce": ("lower",), "lower": ("reduce",), "reduces": ("lowers",),
    "lowers": ("reduces",), "improve": ("enhance",), "enhance": ("improve",),
    "improves": ("enhances",), "enhances": ("improves",), "choose": ("pick",),
    "pick": ("choose",), "first": ("initially",), "finally": ("lastly",),
    "lastly": ("finally",), "key": ("central",), "central": ("key",),
    "step": ("stage",), "stage": ("step",), "careful": ("cautious",),
    "cautious": ("careful",), "strong": ("robust",), "robust": ("strong",),
}

CONNECTORS = (
    "In practice,", "As a rule,", "For this reason,", "On the other hand,", "In short,",
    "Importantly,", "At the same time,", "As a result,", "In most cases,", "Overall,",
)

# Off-topic material for the "off-topic list item" drift: plausible sentences that
# have nothing to do with any prompt.
OFF_TOPIC = (
    "Bananas are a good source of potassium and ripen faster in a paper bag.",
    "The tallest mountain in the solar system is on Mars.",
    "Lighthouses were once powered by whale oil.",
    "A group of owls is called a parliament.",
    "Honey found in ancient tombs is still edible.",
    "Octopuses have three hearts and blue blood.",
)

# Sentences of filler used when a request ignores the end of sequence
# (``ignore_eos``, ``min_tokens``): the simulator keeps "talking".
CONTINUATION = (
    "There is more that could be said about this.",
    "Another point is worth adding here.",
    "The same idea applies in related cases.",
    "This detail is often overlooked.",
    "A further example makes the pattern clearer.",
    "The next step follows from the previous one.",
)

STOPWORDS = frozenset(
    """
    a an the and or but if then else of to in on at by for with about as into from is
    are was were be been being do does did have has had this that these those it its i
    you he she we they me my your our their what which who whom how why when where can
    could should would will shall may might must not no yes please write give tell make
    explain describe some any each every more most other such than too very just also
    only own same so there here all both few many much one two three using use based
    following answer question response text sentence words word your yours them him her
    his hers ours us like know want need imagine pretend yourself compose provide
    suppose consider discuss draft create help
""".split()
)

# Non-ASCII characters the vocabulary holds as whole tokens, so that streams carry
# multi-byte UTF-8 (the "split UTF-8 character" fault needs one to split).
NON_ASCII = ("—", "é", "°", "×", "≈", "…", "€", "ü", "ñ", "’")

# Frequent English words, so that ordinary text (prompts, templates) tokenizes into
# whole words as it would with a real vocabulary.
COMMON_WORDS = tuple("""
    here short answer version comes down few factors let look step starting basics key
    points first part how way think parts cases depend figure estimates put although
    sources vary when changes within often helpful before looking main risk nobody
    checks check again then translation summary text argues matters label confidence
    start quantities combine them consistent question result solve sum lengths items
    total function return value values time year people good new old great little long
    right big high different small large next early young important public bad same able
    last late hard major better best free sure low real whole full special clear certain
    personal open red difficult available likely short single medical current wrong
    private past foreign fine common poor natural significant similar hot dead central
    happy serious ready simple left physical general environmental financial blue
    democratic dark various entire close legal religious cold final main green nice huge
    popular traditional cultural world life hand day man thing woman child work system
    program case week company number group problem fact water money story month lot
    point home study book eye job business issue side kind head house service friend
    father power hour game line end member law car city community name president team
    minute idea body information back parent face others level office door health person
    art war history party result change morning reason research girl guy moment air
    teacher force education say get go see come take find give tell call try ask need
    feel become leave put mean keep begin seem help talk turn show hear play run move
    live believe hold bring happen write provide sit stand lose pay meet include
    continue set learn lead understand watch follow stop create speak read allow add
    spend grow open walk win offer remember love consider appear buy wait serve die send
    expect build stay fall cut reach kill remain suggest raise pass sell require report
    decide pull data model models answer answers training travel blog post trip email
    report friend event speaker explain describe write compare list steps python code
    function algorithm program array string integer sort find return between because
    while after during without through over under again further once both each more most
    other some such only own same than too very just also well even still already always
    never ever however therefore since until although whether either neither
""".split())
