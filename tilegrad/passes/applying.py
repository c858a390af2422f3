"""The `directives` option of a cpu pass that carries out directives (an applier).

Each such pass finds the loops (or tensors) it can transform, and names each by the directive that
would transform it with the pass's own options (its decision: `UnrollJam(stage=0, axis=1, factor=4)`).
Without the option (`tilegrad opt -p 'jam-row-sweeps'`), it transforms them all, as it decides. With
it (`jam-row-sweeps{directives="UnrollJam(stage=0, axis=1, factor=2)"}`, printed directives separated by
`;`, as the pipeline passes the planner's merged with the user's), it transforms exactly those the
directives name (by stage, and axis or tensor; stage None: every stage), with the directive's values;
one that turns the transformation off (Directive.off) leaves what it names as it is. A directive
that names nothing the pass can transform is refused (ScheduleError), listing what it can.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from tilegrad.errors import ScheduleError
from tilegrad.schedule import Directive, Reorder, parse_schedule

T = TypeVar("T")


def given_directives(step, takes: Callable[[Directive], bool]) -> tuple[Directive, ...] | None:
    """The directives of `step`'s `directives` option (None: absent, the pass decides), each one the
    pass carries out (`takes`), or ScheduleError naming it."""
    if step.directives is None:
        return None
    found = parse_schedule(step.directives.replace(";", "\n"), f"{step.name}'s directives option")
    for directive in found:
        if not takes(directive):
            raise ScheduleError(f"{directive}: {step.name} does not carry it out (it takes {step.takes_text})")
    return found


def chosen(step, candidates: Sequence[tuple[Directive, T]], what: str) -> list[tuple[T, Directive]]:
    """What `step` transforms, in the order of `candidates` ((its own directive, the thing), every one
    it can): all of them, each by its own directive, without the `directives` option; with it, those
    a given directive names that does not turn it off, each by that directive. `what` says what the
    pass transforms, for the error naming a directive that names none of them."""
    given = given_directives(step, step.takes)
    refuse_unnamed(step, given, [own for own, _ in candidates], what)
    found = []
    for own, thing in candidates:
        directive = in_force(given, own)
        if directive is not None:
            found.append((thing, directive))
    return found


def reordered(step, candidates: Sequence[tuple[Reorder, tuple[int | str, ...], T]], what: str) -> list[T]:
    """What `step` interchanges, in the order of `candidates` ((its own Reorder, the order the loops
    have now, the thing), every one it can), as `chosen` picks them: a Reorder in the pass's order
    interchanges the thing, one in the order the loops have leaves it as it is; any other order is
    refused (ScheduleError naming both it can)."""
    found = []
    picked = chosen(step, [(own, (own, present, thing)) for own, present, thing in candidates], what)
    for (own, present, thing), directive in picked:
        if directive.order == own.order:
            found.append(thing)
        elif directive.order != present:
            raise ScheduleError(f"{directive}: {step.name} can nest these loops as {own} (interchanged) or as "
                                f"{Reorder(stage=own.stage, order=present)} (as they are), no other order")
    return found


def in_force(given: tuple[Directive, ...] | None, own: Directive) -> Directive | None:
    """The directive a pass carries out for the thing its own directive `own` names: `own` without
    the `directives` option (`given` None); with it, the last given one naming it (the last one
    given for the same thing wins), or None where none does or that one turns it off. For a pass
    whose candidates appear as it transforms (chosen takes them all first)."""
    if given is None:
        return own
    named = [d for d in given if d.names(own)]
    return named[-1] if named and not named[-1].off else None


def refuse_unnamed(step, given: tuple[Directive, ...] | None, candidates: Sequence[Directive], what: str) -> None:
    """ScheduleError for a given directive that names none of `candidates` (the step's own
    directives for everything it can transform), listing them."""
    for directive in given or ():
        if not any(directive.names(own) for own in candidates):
            can = "; ".join(dict.fromkeys(map(str, candidates))) or "none in this kernel"
            raise ScheduleError(f"{directive}: names no {what} that {step.name} can transform (the ones it can: "
                                f"{can})")
