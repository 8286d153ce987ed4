// state.js: the screen's shared state (what each task shows, the
// selection, drafts of tasks not shown, questions, planning requests) and
// small helpers over it: selectedTask, and loadOrder, rule 1 for the
// replies other than GET /api/runner's.

export const state = {
  order: [],            // task names, in configuration order
  tasks: new Map(),     // name → the TaskStatus shown
  reviews: new Map(),   // name → the ReviewReply shown
  shuttingDown: false,
  demo: false,
  selected: null,       // the selected task's name
  attempt: null,        // the selected attempt's ID
  followCurrent: true,  // the selection follows the task's current attempt
  drafts: new Map(),    // name → the feedback draft of a task not shown
  questions: new Map(), // name → the task's questions, oldest first (GET /api/questions)
  planRequests: new Map(), // name → the plan's planning requests (GET /api/plan/requests); null: no planning routes
};

export function selectedTask() {
  return state.selected ? state.tasks.get(state.selected) : null;
}

// loadOrder is UI rule 1 for the replies other than GET /api/runner's (the
// plan, its questions, its planning requests): each load of a task is
// numbered as it is sent, and a reply is applied only if no reply to a
// later load of that task was applied first. Versions alone cannot say
// which of two replies is newer: an import or an applied suggestion
// leaves the review version as it was, and a question's reply has none.
// It also says whether a load of the task is on its way (busy), so that a
// poll is not sent behind one.
export function loadOrder() {
  const sentLoads = new Map();
  const appliedLoads = new Map();
  const loading = new Set();
  return {
    next(name) {
      const n = (sentLoads.get(name) || 0) + 1;
      sentLoads.set(name, n);
      loading.add(name);
      return n;
    },
    take(name, n) {
      if (n < (appliedLoads.get(name) || 0)) return false; // a later load's reply is shown
      appliedLoads.set(name, n);
      return true;
    },
    done(name) {
      loading.delete(name);
    },
    busy(name) {
      return loading.has(name);
    },
  };
}
