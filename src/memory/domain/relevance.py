"""Relevance: how far a hit's similarity stands out from what the same query scores against
everything it searched, so that "nothing matches" can be said per query.

Raw cosine similarity means little on its own: multilingual-e5 puts unrelated text at
0.70-0.80 and a good match at 0.83-0.90, and every query shifts the whole range. Worse, the
model scores a query higher against any text in its own script or language (a Chinese
question is closer to every Chinese window than to the English window that answers it; an
English one closer to English text than to the Malay that answers it). So a hit's relevance
is its similarity standardised against the query's similarity to the searched windows of
the same group (Han script; Malay; other text): `(similarity - mean) / standard deviation`,
in standard deviations. A group too small to have a meaningful spread borrows the whole
searched set's distribution; a searched set smaller than that has no relevance at all.
Measured and chosen in docs/adr/0112 (script groups) and docs/adr/0120 (Malay apart).
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from memory.domain.errors import InvalidInput

# A text is Han when at least this share of its non-space characters are CJK ideographs:
# rojak with one Chinese word stays Latin, a Chinese message with an English name is Han.
HAN_SHARE = 0.2
# A text that is not Han is Malay when more of its words are Malay function words than
# English ones (docs/adr/0120): common, short words that the other language does not use,
# so that a few of them decide even a short message and a Malay noun borrowed into English
# (or the reverse) does not. Rojak counts as Malay when its grammar is Malay. Migration 0218
# spells the same lists in SQL (`memory_text_group`); a test keeps the two equal.
MALAY_WORDS = frozenset(
    """yang dan tak tidak saya kami kita awak dia mereka ini itu ni tu untuk dengan ke di
    dari dalam boleh sudah dah ada apa nak mahu akan lagi belum masih sahaja je juga pun atau
    tapi tetapi kerana sebab bila macam mana berapa siapa kenapa bagaimana perlu kena mesti
    setiap semua hari minggu bulan tahun esok semalam tadi pagi petang malam lah kan ya
    jangan tolong sila terima kasih baru lama buat bagi dapat pergi datang sampai masuk
    keluar""".split()  # noqa: SIM905 (a list of 80 words reads better as prose)
)
ENGLISH_WORDS = frozenset(
    """the a an and or but is are was were be been to of in on at for with from by this that
    these those it its i you he she we they my your our their me him her us them do does did
    have has had not no can cannot will would should could what how why when where who which
    if then than there here please thanks""".split()  # noqa: SIM905
)
# Fewer windows than this in a group (or in the whole searched set) give a standard
# deviation too noisy to standardise against (ADR 0112).
MIN_DISTRIBUTION = 20
# The default rule, chosen on the precision set (ADRs 0112, 0120): a query gets semantic
# hits only when its best window stands out by DEFAULT_BEST_RELEVANCE standard deviations
# (most no-answer queries then get none), then every window at DEFAULT_MIN_RELEVANCE or more.
DEFAULT_MIN_RELEVANCE = 2.25
DEFAULT_BEST_RELEVANCE = 3.0
# `min_relevance` accepts this range; nothing real scores above it.
MAX_MIN_RELEVANCE = 10.0

_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_SPACE = re.compile(r"\s")
_WORD = re.compile(r"[A-Za-z]+")


class ScriptGroup(StrEnum):
    """The group a text's similarities are standardised within (the name is from when the
    groups were scripts alone, ADR 0112; Malay is apart since ADR 0120)."""

    HAN = "han"
    MALAY = "malay"
    OTHER = "other"


def script_group(text: str) -> ScriptGroup:
    letters = len(text) - len(_SPACE.findall(text))
    if letters == 0:
        return ScriptGroup.OTHER
    if len(_HAN.findall(text)) / letters >= HAN_SHARE:
        return ScriptGroup.HAN
    words = [w.lower() for w in _WORD.findall(text)]
    malay = sum(1 for w in words if w in MALAY_WORDS)
    english = sum(1 for w in words if w in ENGLISH_WORDS)
    return ScriptGroup.MALAY if malay > english else ScriptGroup.OTHER


@dataclass(frozen=True, slots=True)
class SimilarityDistribution:
    """A query's similarities to a set of windows: their mean, (population) standard
    deviation and how many there were."""

    mean: float
    std: float
    count: int

    @classmethod
    def of(cls, similarities: Sequence[float]) -> SimilarityDistribution:
        if not similarities:
            return cls(0.0, 0.0, 0)
        return cls(
            statistics.fmean(similarities), statistics.pstdev(similarities), len(similarities)
        )

    @property
    def usable(self) -> bool:
        return self.count >= MIN_DISTRIBUTION and self.std > 0.0

    def standardise(self, similarity: float) -> float:
        return (similarity - self.mean) / self.std


@dataclass(frozen=True, slots=True)
class QueryDistribution:
    """One query's similarity distributions: over the whole searched set and per script
    group. `relevance` picks the hit's own group when it is large enough."""

    overall: SimilarityDistribution
    groups: dict[ScriptGroup, SimilarityDistribution]

    @classmethod
    def of(cls, scored: Sequence[tuple[ScriptGroup, float]]) -> QueryDistribution:
        by_group: dict[ScriptGroup, list[float]] = {}
        for group, similarity in scored:
            by_group.setdefault(group, []).append(similarity)
        return cls(
            SimilarityDistribution.of([s for _, s in scored]),
            {g: SimilarityDistribution.of(s) for g, s in by_group.items()},
        )

    @classmethod
    def of_groups(cls, groups: dict[ScriptGroup, SimilarityDistribution]) -> QueryDistribution:
        """From per-group figures alone (what a database aggregate returns): the overall
        distribution is the groups' pooled one."""
        count = sum(g.count for g in groups.values())
        if count == 0:
            return cls(SimilarityDistribution(0.0, 0.0, 0), groups)
        mean = sum(g.mean * g.count for g in groups.values()) / count
        second = sum((g.std**2 + g.mean**2) * g.count for g in groups.values()) / count
        std = math.sqrt(max(second - mean**2, 0.0))
        return cls(SimilarityDistribution(mean, std, count), groups)

    def _against(self, group: ScriptGroup) -> SimilarityDistribution | None:
        own = self.groups.get(group)
        if own is not None and own.usable:
            return own
        return self.overall if self.overall.usable else None

    def relevance(self, group: ScriptGroup, similarity: float) -> float | None:
        """Standard deviations above the mean of the hit's group (or of everything searched
        when the group is small); None when even that is too small to calibrate."""
        against = self._against(group)
        return None if against is None else against.standardise(similarity)

    def similarity_floor(self, group: ScriptGroup, min_relevance: float) -> float | None:
        """The least similarity a hit of `group` needs to reach `min_relevance`; None when
        the group cannot be calibrated (then nothing of it reaches an explicit floor)."""
        against = self._against(group)
        return None if against is None else against.mean + min_relevance * against.std


def relevances(scored: Sequence[tuple[ScriptGroup, float]]) -> list[float | None]:
    """Every item's relevance against the others (the exact scan's view of a query)."""
    distribution = QueryDistribution.of(scored)
    return [distribution.relevance(g, s) for g, s in scored]


def parse_min_relevance(value: object, *, field: str = "min_relevance") -> float:
    """A `min_relevance` from a request: a finite number in [0, MAX_MIN_RELEVANCE]."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or not 0.0 <= value <= MAX_MIN_RELEVANCE
    ):
        raise InvalidInput(
            field, f"must be a number between 0 and {MAX_MIN_RELEVANCE:g}, got {value!r}"
        )
    return float(value)


@dataclass(frozen=True, slots=True)
class RelevanceFilter:
    """Which semantic hits a search keeps: none unless the query's best hit reaches
    `min_best`, then those at `min_relevance` or more. The default is the two-level rule
    of ADR 0112; a caller's `min_relevance` is one floor for every hit (`explicit`). Under
    the default a hit that cannot be calibrated (too few windows searched) is kept, because
    nothing says it is off-topic; under an explicit floor it is dropped."""

    min_relevance: float = DEFAULT_MIN_RELEVANCE
    min_best: float = DEFAULT_BEST_RELEVANCE
    explicit: bool = False

    @classmethod
    def requested(cls, value: float | None) -> RelevanceFilter:
        if value is None:
            return cls()
        floor = parse_min_relevance(value)
        return cls(floor, floor, explicit=True)

    def keeps(self, relevance: float | None) -> bool:
        if relevance is None:
            return not self.explicit
        return relevance >= self.min_relevance

    def keep(self, relevances: Sequence[float | None]) -> list[bool]:
        """For one query's hits (all of its best ones): which are kept."""
        best = max((r for r in relevances if r is not None), default=None)
        if best is not None and best < self.min_best:
            return [False] * len(relevances)
        return [self.keeps(r) for r in relevances]
