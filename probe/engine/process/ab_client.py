"""The engine handle's side of the live A/B: the side engine is started as a warm switch's is
(it compiles and prewarms beside the serving engine); once warm, the serving engine splits its
arrivals, and the handle relays every other one to the side engine as it reads it, so arm B's
requests wait on no screen and no timer. Adopting B is the warm switch's cut over; keeping A
stops B and has A serve on, B's records taken in and what B held served."""

from __future__ import annotations

from probe.contract.options import OptConfig
from probe.contract.protocol import (
    ArmRequest,
    ArmStart,
    ArmStarted,
    EndSplit,
    KnownConfig,
    Split,
)


class ABClient:
    """Mixed into EngineClient (probe/engine/process/engine_process.py), whose warm switch and
    command sending it uses."""

    _ab: str = ""                   # "" none; "warming": B compiles; "split": both serve
    _arm_id: str = ""               # arm B's config id, once it said

    # EngineClient's, declared here for the type checker
    def warm_switch(self, options: OptConfig) -> None:
        raise NotImplementedError

    def cut_over(self) -> None:
        raise NotImplementedError

    def stop_side(self) -> None:
        raise NotImplementedError

    def send(self, command) -> None:
        raise NotImplementedError

    def _side_outbox(self):
        raise NotImplementedError

    def ab_running(self) -> bool:
        return bool(self._ab)

    def ab_start(self, options: OptConfig) -> None:
        self.warm_switch(options)
        self._ab, self._arm_id = "warming", ""

    def ab_split(self) -> None:
        outbox = self._side_outbox()
        if self._ab != "warming" or outbox is None:
            return
        self.send(Split())
        outbox.put(ArmStart())
        self._ab = "split"

    def ab_adopt(self) -> None:
        """Arm B serves everything: the serving engine stops, B continues the session."""
        self._ab = ""
        self.cut_over()

    def ab_keep(self) -> None:
        """Arm A serves everything: B stops (what it served is in the journal), then A takes
        B's records in and serves what B held."""
        split, arm = self._ab == "split", self._arm_id
        self._ab = ""
        self.stop_side()
        if split:
            self.send(EndSplit(arm))

    def _relay(self, request: ArmRequest) -> None:
        """A request arm A diverted, to arm B. With no B (it died) it is dropped here: A holds
        it among what it diverted and serves it when the A/B ends (EndSplit)."""
        outbox = self._side_outbox()
        if outbox is not None:
            outbox.put(request)

    def _arm_started(self, event: ArmStarted) -> None:
        self._arm_id = event.config_id
        self.send(KnownConfig(event.options, event.notes))
