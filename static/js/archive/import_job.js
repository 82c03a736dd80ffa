// A background import on the Archive page, for either import form (ChatGPT, Claude.ai; the form names its
// API): the export sent in pieces, the job started, its progress (conversations done of total), Cancel and
// Resume, the summary when it ends, and the document lists refreshed in place. The page names a job still
// queued or running (`data-job-id`), so a reload follows it again.
const POLL_MS = 700;
// Each file goes up in pieces (`archive/upload_pieces.py`: the server holds a request's whole body in
// memory, so no request carries more than one piece), then the import starts from the uploaded files.
const PIECE_TRIES = 4;

export function csrfToken(form) {
  const match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
  if (match) return decodeURIComponent(match[1]);
  return form?.querySelector("input[name=csrfmiddlewaretoken]")?.value ?? "";
}

function parts(form) {
  return {
    box: form.querySelector("[data-import-job]"),
    progress: form.querySelector("[data-import-progress]"),
    text: form.querySelector("[data-import-progress-text]"),
    summary: form.querySelector("[data-import-summary]"),
    problems: form.querySelector("[data-import-problems]"),
    submit: form.querySelector("button[type=submit]"),
    cancel: form.querySelector("[data-import-cancel]"),
    resume: form.querySelector("[data-import-resume]"),
  };
}

export function showUpload(form, loaded, total) {
  const p = parts(form);
  p.box.hidden = false;
  p.summary.hidden = true;
  p.problems.hidden = true;
  p.submit.disabled = true;
  p.progress.max = total || 1;
  p.progress.value = loaded;
  p.text.textContent = `Uploading: ${Math.round((100 * loaded) / (total || 1))}%`;
}

export function showSummary(form, data, onDone) {
  const p = parts(form);
  p.summary.hidden = false;
  p.summary.textContent =
    `Imported ${data.conversations} conversation(s) with ${data.messages} message(s)` +
    (data.alternate_messages ? ` and ${data.alternate_messages} on other branches` : "") +
    (data.projects ? `, and ${data.projects} project(s)` : "") +
    `; ${data.duplicates} already in the archive, ${data.skipped} skipped.`;
  p.summary.dataset.state = "done";
  p.problems.replaceChildren();
  for (const problem of data.problems || []) {
    const item = document.createElement("li");
    // index null: not a conversation (the export's memories.json)
    const where = problem.index === null ? "" : `#${problem.index} ${problem.title || "untitled"}: `;
    item.textContent = where + problem.reason;
    p.problems.append(item);
  }
  p.problems.hidden = !p.problems.children.length;
  onDone?.(data);
}

export function showError(form, detail) {
  const p = parts(form);
  p.summary.hidden = false;
  p.summary.textContent = detail;
  p.summary.dataset.state = "error";
  p.submit.disabled = false;
}

function showProgress(form, job) {
  const p = parts(form);
  p.box.hidden = false;
  p.box.dataset.state = job.state;
  if (job.total === null) {
    p.progress.removeAttribute("value"); // still counting the conversations: indeterminate
    p.text.textContent = job.state === "queued" ? "Waiting for the import to start…" : "Reading the export…";
  } else {
    p.progress.max = Math.max(job.total, 1);
    p.progress.value = job.done;
    // What the job counts: "conversations" (ChatGPT), "conversations and projects" (Claude.ai).
    p.text.textContent = `Imported ${job.done} of ${job.total} ${form.dataset.importItems || "conversations"}`;
  }
}

// The document lists (this page of them, with the page links), as the server renders them now.
async function refreshDocuments() {
  const here = window.location.pathname + window.location.search;
  const response = await fetch(here, { headers: { Accept: "text/html" } });
  if (!response.ok) return;
  const fresh = new DOMParser().parseFromString(await response.text(), "text/html");
  const current = document.querySelector("[data-archive-documents]");
  const replacement = fresh.querySelector("[data-archive-documents]");
  if (current && replacement) current.replaceWith(document.importNode(replacement, true));
}

// Follow the job to its end; `onDone(job)` takes what a finished import offers (instructions, memories).
export function followJob(form, jobId, onDone) {
  const p = parts(form);
  const url = `${form.dataset.jobsApi}${encodeURIComponent(jobId)}/`;
  form.dataset.jobId = jobId;
  p.submit.disabled = true;
  p.summary.hidden = true;
  p.resume.hidden = true;
  p.cancel.hidden = false;
  p.cancel.disabled = false;

  const post = async (action) => {
    const response = await fetch(`${url}${action}/`, {
      method: "POST",
      headers: { "X-CSRFToken": csrfToken(form), Accept: "application/json" },
    });
    return response.json().catch(() => ({}));
  };
  p.cancel.onclick = async () => {
    p.cancel.disabled = true;
    await post("cancel");
  };
  p.resume.onclick = async () => {
    const job = await post("resume");
    if (job.state) followJob(form, jobId, onDone);
  };

  const ended = (job) => {
    p.cancel.hidden = true;
    p.submit.disabled = false;
    form.dataset.jobId = "";
    if (job.state === "done") {
      showSummary(form, job, onDone);
    } else if (job.state === "cancelled") {
      p.summary.hidden = false;
      p.summary.dataset.state = "cancelled";
      p.summary.textContent =
        `Cancelled after ${job.done} of ${job.total ?? "?"} ${form.dataset.importItems || "conversations"} ` +
        `(${job.conversations} imported). Resume imports only the rest.`;
      p.resume.hidden = false;
    } else {
      showError(form, job.error?.detail || "The import failed.");
      if (job.error?.error === "import_interrupted") p.resume.hidden = false;
    }
    refreshDocuments();
  };

  const poll = async () => {
    let job;
    try {
      const response = await fetch(url, { headers: { Accept: "application/json" } });
      job = await response.json();
      if (!response.ok) return showError(form, job.detail || `The import cannot be followed (HTTP ${response.status}).`);
    } catch {
      window.setTimeout(poll, POLL_MS * 3); // the server is away for a moment: try again
      return;
    }
    showProgress(form, job);
    if (job.state === "queued" || job.state === "running") {
      window.setTimeout(poll, POLL_MS);
    } else {
      ended(job);
    }
  };
  poll();
}

async function answer(response) {
  let data = {};
  try {
    data = await response.json();
  } catch {
    data = { detail: "The server's answer could not be read." };
  }
  if (!response.ok) throw new Error(data.detail || `The upload failed (HTTP ${response.status}).`);
  return data;
}

function api(form, url, options = {}) {
  return fetch(url, {
    ...options,
    headers: { "X-CSRFToken": csrfToken(form), Accept: "application/json", ...(options.headers || {}) },
  });
}

async function uploadInPieces(form, file, onSent) {
  const pieceBytes = Number(form.dataset.pieceBytes) || 8 * 1024 * 1024;
  const created = await answer(await api(form, form.dataset.uploadsApi, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ name: file.name, size: file.size }),
  }));
  const url = `${form.dataset.uploadsApi}${encodeURIComponent(created.upload_id)}/`;
  let received = 0;
  let failures = 0;
  while (received < file.size) {
    const piece = file.slice(received, Math.min(received + pieceBytes, file.size));
    try {
      const state = await answer(await api(form, `${url}?offset=${received}`, {
        method: "PUT",
        headers: { "Content-Type": "application/octet-stream" },
        body: piece,
      }));
      received = state.received;
      failures = 0;
      onSent(received);
    } catch (error) {
      // A lost answer or a dropped connection: ask where the upload ends, and go on from there.
      failures += 1;
      if (failures >= PIECE_TRIES) throw error;
      const state = await answer(await api(form, url)).catch(() => null);
      if (state) received = state.received;
    }
  }
  return created.upload_id;
}

// An import form run as a background import: its files sent in pieces, the job started at the form's API
// (`data-api`), then followed; a job the page names (`data-job-id`, still running at a reload) is followed again.
export function backgroundImportForm(form, onDone) {
  if (!form) return;
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const files = [...form.querySelector("input[type=file]").files];
    const total = files.reduce((sum, file) => sum + file.size, 0);
    showUpload(form, 0, total);
    try {
      if (!files.length) throw new Error("Choose the export zip or its conversations.json first.");
      const uploadIds = [];
      let before = 0;
      for (const file of files) {
        uploadIds.push(await uploadInPieces(form, file, (sent) => showUpload(form, before + sent, total)));
        before += file.size;
      }
      const body = new FormData(form);
      const job = await answer(await api(form, `${form.dataset.api}?background=true`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({
          upload_ids: uploadIds,
          collection: body.get("collection") || "conversations",
          assistant_name: body.get("assistant_name") || "",
        }),
      }));
      followJob(form, job.job_id, onDone);
    } catch (error) {
      form.querySelector("[data-import-job]").hidden = true;
      showError(form, error.message);
    }
  });
  if (form.dataset.jobId) followJob(form, form.dataset.jobId, onDone);
}
