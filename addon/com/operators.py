"""The operators' common shape: read the options, call one function on the target, report;
and for long runs, steps with a progress bar that Esc cancels."""
from ...models.core.errors import SmplIkError
from .blender import progress_bar
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


class StepsOperator:
    """Mixin for a long run: `_steps(context)` is a generator that yields the fraction done
    (0-1) and returns a result, which `_done(result)` reports (returning the operator's
    result); closing the generator early must leave nothing half-done. `run_to_end` runs it
    at once under the window manager's progress bar (execute: scripts, headless);
    `run_modal` runs it a step per timer event, with the progress bar, and Esc closes it
    and reports CANCEL_MESSAGE. SmplIkError from either becomes a report and cancels."""

    CANCEL_MESSAGE = "Cancelled; nothing was changed"

    def run_to_end(self, context):
        try:
            with progress_bar(context) as progress:
                steps = self._steps(context)
                while True:
                    try:
                        progress(next(steps))
                    except StopIteration as done:
                        result = done.value
                        break
        except SmplIkError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        return self._done(result)

    def run_modal(self, context):
        try:
            self._gen = self._steps(context)
        except SmplIkError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        wm = context.window_manager
        self._timer = wm.event_timer_add(0.001, window=context.window)
        wm.progress_begin(0, 1000)
        wm.modal_handler_add(self)
        return {"RUNNING_MODAL"}

    def _finish(self, context):
        wm = context.window_manager
        wm.event_timer_remove(self._timer)
        wm.progress_end()

    def modal(self, context, event):
        if event.type == "ESC":
            self._gen.close()
            self._finish(context)
            self.report({"WARNING"}, self.CANCEL_MESSAGE)
            return {"CANCELLED"}
        if event.type != "TIMER":
            return {"PASS_THROUGH"}
        try:
            fraction = next(self._gen)
        except StopIteration as done:
            self._finish(context)
            return self._done(done.value)
        except SmplIkError as exc:
            self._finish(context)
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        context.window_manager.progress_update(int(fraction * 1000))
        return {"RUNNING_MODAL"}
