"""A pool's life over several forwards, as SGLang's paged allocators drive it.

PoolLife owns the bookkeeping (free pages, live requests, the full-to-SWA mapping) and turns each
forward into a scenario Forward; callers (the Hypothesis strategies, the state machine) make every
choice, so the same code serves both and shrinks the same way. Page 0 is never handed out.
SWA slots are allocated page-wise for a request's in-window tail only, at the full slot's offset
in its page; evicted or freed tokens map back to 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from scenarios.model import Forward, Geometry, Remap, RequestSpan, Scenario


@dataclass
class Request:
    pages: list[int] = field(default_factory=list)
    length: int = 0  # tokens with a slot
    swa_pages: dict[int, int] = field(default_factory=dict)  # full page -> SWA page


@dataclass
class View:
    """Where a forward's loc lives: a fresh tensor, or a slice of a persistent storage."""

    storage: Optional[int] = None
    offset: int = 0


class PoolLife:
    def __init__(self, geometry: Geometry) -> None:
        g = self.geometry = geometry
        self.free_pages = list(range(1, g.size // g.page_size + 1))
        self.free_swa_pages = list(range(1, g.size_swa // g.page_size + 1)) if g.kind.swa else []
        self.requests: dict[int, Request] = {}
        self.mapping = [0] * (g.size + g.page_size) if g.kind.swa else None
        self.initial_mapping = list(self.mapping) if self.mapping is not None else None
        self.pending: dict[int, int] = {}
        self.forwards: list[Forward] = []
        self.storages = 0
        self.spans: list[RequestSpan] = []  # the requests `extend` grew since `take_spans`
        self._last_extended: Optional[int] = None

    # -- allocation ---------------------------------------------------------------------------
    def slots(self, rid: int) -> list[int]:
        request, size = self.requests[rid], self.geometry.page_size
        return [page * size + offset for page in request.pages for offset in range(size)][
            : request.length
        ]

    def room(self, rid: Optional[int] = None) -> int:
        """Tokens a request (or a new one) can still get."""
        spare = (
            0
            if rid is None
            else len(self.requests[rid].pages) * self.geometry.page_size - self.requests[rid].length
        )
        return spare + len(self.free_pages) * self.geometry.page_size

    def grow(self, rid: int, tokens: int, picks: list[int], window: int) -> list[int]:
        """Give request `rid` (new if unknown) `tokens` more slots; new pages come from the free
        list at positions `picks` (taken modulo its length). The last `window` tokens of the
        request get SWA slots. Returns the new tokens' slots."""
        request = self.requests.setdefault(rid, Request())
        tokens = min(tokens, self.room(rid))
        needed = -(-(request.length + tokens) // self.geometry.page_size) - len(request.pages)
        for pick in (picks + [0] * needed)[:needed]:
            request.pages.append(self.free_pages.pop(pick % len(self.free_pages)))
        request.length += tokens
        self._window(rid, window)
        return self.slots(rid)[request.length - tokens :]

    def extend(self, rid: int, tokens: int, picks: list[int], window: int) -> list[int]:
        """`grow` for tokens a forward writes now; their request's span is added to `spans`
        (none where the pool had no room for a token)."""
        slots = self.grow(rid, tokens, picks, window)
        if slots and self.spans and self._last_extended == rid:  # one request, one span
            self.spans[-1] = RequestSpan(
                self.spans[-1].extend + len(slots), self.requests[rid].length
            )
        elif slots:
            self.spans.append(RequestSpan(len(slots), self.requests[rid].length))
        self._last_extended = rid
        return slots

    def take_spans(self) -> list[RequestSpan]:
        """The spans `extend` added since the last take: one batch's requests."""
        spans, self.spans, self._last_extended = self.spans, [], None
        return spans

    def _window(self, rid: int, window: int) -> None:
        """Map the request's last `window` tokens to SWA slots and unmap the rest."""
        if self.mapping is None:
            return
        request, size = self.requests[rid], self.geometry.page_size
        slots = self.slots(rid)
        keep = set(slots[max(0, len(slots) - window) :]) if window > 0 else set()
        for slot in slots:
            page = slot // size
            if slot in keep and page not in request.swa_pages and self.free_swa_pages:
                request.swa_pages[page] = self.free_swa_pages.pop(0)
            target = (
                request.swa_pages[page] * size + slot % size
                if slot in keep and page in request.swa_pages
                else 0
            )
            self._set(slot, target)
        for page in [p for p in request.swa_pages if not any(s // size == p for s in keep)]:
            self.free_swa_pages.append(request.swa_pages.pop(page))

    def evict(self, rid: int, window: int) -> None:
        """Slide the request's window: tokens before its last `window` lose their SWA slots."""
        self._window(rid, window)

    def free(self, rid: int) -> None:
        self._window(rid, 0)
        self.free_pages += self.requests.pop(rid).pages

    def _set(self, slot: int, value: int) -> None:
        if self.mapping[slot] != value:
            self.mapping[slot] = value
            self.pending[slot] = value

    # -- forwards -----------------------------------------------------------------------------
    def new_storage(self) -> int:
        self.storages += 1
        return self.storages - 1

    def forward(
        self,
        loc: list[int],
        *,
        padding: int = 0,
        narrow: Optional[int] = None,
        view: Optional[View] = None,
        in_place: bool = True,
        encoder_loc: Optional[list[int]] = None,
        cross_layers: tuple[int, ...] = (),
        requests: Optional[list[RequestSpan]] = None,
    ) -> Forward:
        """Record a forward writing `loc` (+ `padding` tokens at slot 0), the new tokens of
        `requests` where given, carrying the mapping changes made since the previous forward
        (before the first, they are the initial mapping)."""
        view = view or View()
        remap = None
        if self.pending and not self.forwards:
            self.initial_mapping = list(self.mapping)
        elif self.pending:
            remap = Remap(sorted([slot, value] for slot, value in self.pending.items()), in_place)
        self.pending = {}
        padded = loc + [0] * padding
        encoder = None if encoder_loc is None else encoder_loc + [0] * padding
        forward = Forward(
            padded,
            narrow=narrow,
            encoder_loc=encoder if cross_layers else None,
            cross_layers=list(cross_layers),
            loc_storage=view.storage,
            loc_offset=view.offset,
            remap=remap,
            requests=requests,
        )
        self.forwards.append(forward)
        return forward

    def scenario(self, seed: int, name: str, **fields) -> Scenario:
        return Scenario(
            geometry=self.geometry,
            forwards=list(self.forwards),
            seed=seed,
            mapping=self.initial_mapping,
            name=name,
            stray_swa_loc=not self.geometry.kind.swa,
            **fields,
        )


def split_spans(spans: list[RequestSpan], at: int) -> tuple[list[RequestSpan], list[RequestSpan]]:
    """The requests of a batch cut after its first `at` tokens, as two micro-batches hold them: a
    request cut in two has its first tokens in the first, with the length they reach."""
    first: list[RequestSpan] = []
    second: list[RequestSpan] = []
    for span in spans:
        head = min(span.extend, max(at, 0))
        at -= span.extend
        if head:
            first.append(RequestSpan(head, span.prefix + head))
        if span.extend - head:
            second.append(RequestSpan(span.extend - head, span.length))
    return first, second
