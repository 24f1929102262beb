"""Era detection from what a module offers (its capabilities, harness/sut/probe/capabilities.py),
never from a version: the era they amount to, the KVWriteLoc constructors a SUT lacks, and the
lines that say so."""

from __future__ import annotations

from typing import Any

from harness.sut.probe.capabilities import PROBED, Capabilities, probe

REQUIRED_NAMES = ("MHATokenToKVPool", "MLATokenToKVPool", "SWAKVPool")


def missing_names(module: Any) -> list[str]:
    return [name for name in REQUIRED_NAMES if not hasattr(module, name)]


def detect(module: Any) -> tuple[str | None, Capabilities, str]:
    """(era, capabilities, why no era fits): the era is None when the probed capabilities fit
    no modelled call convention, and the third value then says what is missing."""
    capabilities = probe(module)
    era, missing = era_of(capabilities)
    return era, capabilities, "; ".join(missing)


# ---- the era the capabilities amount to -------------------------------------------------------


def _flag(caps: Capabilities, name: str, need: str) -> list[str]:
    value = getattr(caps, name)
    if value:
        return []
    if value is None:
        return [f"{need}: unknown ({caps.reason_unknown(name) or 'not probed'})"]
    return [need]


def era_of(caps: Capabilities) -> tuple[str | None, list[str]]:
    """The modelled era whose call convention `caps` support, or (None, what is missing).

    legacy needs nothing; kwarg the swa_loc= keyword; bundled a two-field KVWriteLoc (loc, swa
    loc) and a 2-value unwrap helper; current a KVWriteLoc with a third field (the full loc) and
    a 3-value unwrap (with or without the for_layer/for_batch constructors:
    missing_constructors). The fields' names are the release's own: only their order counts."""
    if caps.write_loc is None:
        return None, [f"KVWriteLoc: unknown ({caps.reason_unknown('write_loc') or 'not probed'})"]
    if not caps.write_loc:
        if caps.swa_loc_keyword is None:
            return None, _flag(
                caps, "swa_loc_keyword", "SWAKVPool.set_kv_buffer's swa_loc= keyword"
            )
        return ("kwarg" if caps.swa_loc_keyword else "legacy"), []
    fields = caps.write_loc_fields
    if fields is None:
        return None, _flag(caps, "write_loc_fields", "KVWriteLoc's fields")
    # Roles by position, never by name: every call site builds KVWriteLoc(loc, swa_loc[,
    # full_loc]) in that order, so a release that renames a field and its readers keeps its era.
    if len(fields) < 2:
        return None, [
            (
                f"KVWriteLoc fields {fields}: fewer than two, so no slot for the SWA loc that "
                "every KVWriteLoc call site passes second"
            )
        ]
    if len(fields) >= 3:
        # The constructors are the call sites' side of the convention: a release without them
        # (0.5.15 to 0.5.21) builds KVWriteLoc directly, and its call sites are driven so
        # (missing_constructors); the pools' side is the 3-value unwrap.
        if caps.unwrap_arity not in (3, None):
            return None, [
                (
                    f"KVWriteLoc has a third field ({fields[2]}), but its unwrap helper returns "
                    f"{caps.unwrap_arity} values: the `current` pools unpack "
                    "(loc, swa_loc, full_loc)"
                )
            ]
        return "current", []
    if caps.unwrap_arity != 2:
        arity = "unknown" if caps.unwrap_arity is None else f"{caps.unwrap_arity} values"
        return None, [
            (
                f"KVWriteLoc{fields} without a third field, but its unwrap helper returns "
                f"{arity}: the `bundled` pools unpack (loc, swa_loc)"
            )
        ]
    return "bundled", []


def conventions(caps: Capabilities, era: str | None) -> tuple[str, ...]:
    """The call conventions a SUT's capabilities offer: its era's, and the kwarg one beside it
    where its SWA pool still takes swa_loc= (a loc alone is no convention of a later era: its SWA
    pool asserts the SWA loc it is not given)."""
    offered = () if era is None else (era,)
    if caps.swa_loc_keyword and era != "kwarg":
        offered += ("kwarg",)
    return offered


CONSTRUCTORS = ("for_layer", "for_batch")


def missing_constructors(caps: Capabilities | None) -> frozenset[str]:
    """The KVWriteLoc constructors of the `current` call sites that a SUT probes without: its
    call sites build KVWriteLoc(loc, swa_loc) directly where they pair a SWA loc, and pass a
    bare loc where they do not (backends/era_calls.py, backends/call_shapes.py direct_shape)."""
    if caps is None or not caps.write_loc:
        return frozenset()
    return frozenset(name for name in CONSTRUCTORS if getattr(caps, name) is False)


def describe(caps: Capabilities) -> list[str]:
    """One line per capability, then the era, for `kvh run` and `kvh sut check`."""
    lines = []
    for name in PROBED:
        value = getattr(caps, name)
        if value is None:
            reason = caps.reason_unknown(name)
            shown = f"unknown: {reason}" if reason else "absent"
        else:
            shown = ", ".join(value) if isinstance(value, tuple) else str(value)
        lines.append(f"{name}: {shown or '-'}")
    era, missing = era_of(caps)
    direct = sorted(missing_constructors(caps)) if era == "current" else []
    lines.append(
        (
            f"era: {era}"
            + (
                f" (no KVWriteLoc.{'/'.join(direct)}: its call sites build KVWriteLoc directly)"
                if direct
                else ""
            )
        )
        if era
        else "era: fits no modelled call convention; missing: " + "; ".join(missing)
    )
    return lines
