"""The operators' common shape: read the options, call one function on the target, report."""
from ...models.core.errors import SmplIkError
from .objects import target_body


class BodyOperator:
    """Mixin: `run(context, target)` on what `target(context)` picks (the body here);
    SmplIkError from either becomes a report and cancels; a message `run` returns is
    reported as information. There is no poll: a script or a shortcut run with the wrong
    selection is told what to select instead of "poll() failed" (the panels show these
    buttons only when there is something to act on)."""

    bl_options = {"REGISTER", "UNDO"}

    def target(self, context):
        return target_body(context)

    def execute(self, context):
        try:
            message = self.run(context, self.target(context))
        except SmplIkError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        if message:
            self.report({"INFO"}, message)
        return {"FINISHED"}
