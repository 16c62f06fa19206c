// The ModalStack inspector: a list of sessions, and each session drawn live as a phone would
// show it, with the controls an app has (dismiss, answer an alert, present, update a progress).
//
// It holds no data of its own: everything comes from the API of the server that serves it, with
// the API key its user types in (kept in sessionStorage, sent as `Authorization: Bearer`, never in
// a URL). Every string from the server is written with textContent or as an attribute value,
// never parsed as HTML. Nothing is put on `window`.
"use strict";

(() => {
  const KEY_STORAGE = "modalstack.inspector.apiKey";
  const LIST_LIMIT = 50;
  const LIST_REFRESH_MS = 2000;
  const STEP_MS = 150; // one step of a transition plan
  const EVENTS_PAGE = 200;
  const EVENTS_MAX_PAGES = 50;
  const TIMELINE_SHOWN = 100;
  const STREAM_SILENCE_MS = 65000; // reconnect when not even a heartbeat came for this long
  const SESSION_ID = /^[A-Za-z0-9._~-]{1,128}$/;
  // Every style, and the alert-like ones: the server's, read by `loadStyles` before anything is drawn.
  let STYLES = [];
  let ALERT_LIKE = new Set();
  const FRAME = { width: 390, height: 780, top: 54 }; // css px; `top`: below the status bar
  const HEADER = 48; // how much of a container stays visible above the one over it

  // ------------------------------------------------------------------ DOM helpers

  const PROPERTIES = new Set(["value", "checked", "disabled", "hidden", "selected", "min", "max", "step"]);

  /** An element with attributes, properties, listeners (`onclick`) and text or element children. */
  function el(tag, props = {}, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(props)) {
      if (value === undefined || value === null || value === false) continue;
      if (name === "class") node.className = value;
      else if (name === "text") node.textContent = String(value);
      else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
      else if (PROPERTIES.has(name)) node[name] = value;
      else node.setAttribute(name, value === true ? "" : String(value));
    }
    append(node, children);
    return node;
  }

  /** An SVG element with its attributes (SVG needs its namespace; `el` makes HTML). */
  function svg(tag, attributes = {}, ...children) {
    const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
    for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, String(value));
    node.append(...children);
    return node;
  }

  /** A padlock drawn, not a glyph: the emoji U+1F512 is an empty box where no font has it. */
  function lockIcon() {
    return svg("svg", { class: "lock-icon", viewBox: "0 0 12 14", width: 10, height: 12, "aria-hidden": "true", focusable: "false" },
      svg("path", { d: "M3 6V4a3 3 0 0 1 6 0v2", fill: "none", stroke: "currentColor", "stroke-width": 1.6 }),
      svg("rect", { x: 1, y: 6, width: 10, height: 8, rx: 1.5, fill: "currentColor" }));
  }

  function append(node, children) {
    for (const child of children.flat(Infinity)) {
      if (child === undefined || child === null || child === false) continue;
      node.append(child instanceof Node ? child : String(child));
    }
    return node;
  }

  function clear(node) {
    while (node.firstChild) node.firstChild.remove();
    return node;
  }

  const $ = (selector, root = document) => root.querySelector(selector);

  function sleep(ms, signal) {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      signal?.addEventListener("abort", () => { clearTimeout(timer); resolve(); }, { once: true });
    });
  }

  function uuid() {
    if (typeof crypto.randomUUID === "function") return crypto.randomUUID();
    const bytes = crypto.getRandomValues(new Uint8Array(16)); // not a secure context: no randomUUID
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    const hex = [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  }

  /** `03:31:59.109` for today (UTC), else the date too; the full time is in `datetime`. */
  function timeElement(iso, className) {
    if (!iso) return el("span", { class: className, text: "—" });
    const today = new Date().toISOString().slice(0, 10);
    const shown = iso.startsWith(today) ? iso.slice(11, 23) : iso.slice(0, 23).replace("T", " ");
    return el("time", { class: className, datetime: iso, title: iso, text: shown });
  }

  function age(iso) {
    const seconds = Math.max(0, Math.round((Date.now() - Date.parse(iso)) / 1000));
    if (!Number.isFinite(seconds)) return "";
    if (seconds < 60) return `${seconds} s ago`;
    if (seconds < 3600) return `${Math.floor(seconds / 60)} min ago`;
    if (seconds < 86400) return `${Math.floor(seconds / 3600)} h ago`;
    return `${Math.floor(seconds / 86400)} d ago`;
  }

  function shortId(id) {
    return typeof id === "string" ? id.slice(0, 6) : "";
  }

  function prettyJSON(value) {
    return JSON.stringify(value, null, 2);
  }

  // ------------------------------------------------------------------ the credential and the API

  const credential = {
    get: () => sessionStorage.getItem(KEY_STORAGE),
    set: (key) => sessionStorage.setItem(KEY_STORAGE, key),
    forget: () => sessionStorage.removeItem(KEY_STORAGE),
  };

  /** Thrown by `api` when the credential is refused: the page goes back to the prompt. */
  class Unauthorized extends Error {
    constructor(problem) {
      super("unauthorized");
      this.problem = problem;
    }
  }

  function authorization(headers) {
    const key = credential.get();
    if (key) headers.set("Authorization", `Bearer ${key}`);
    return headers;
  }

  /**
   * One request to the API: `{status, ok, json, problem, headers}`. A body is sent as JSON; POST and
   * PATCH carry a fresh Idempotency-Key. A 401 throws `Unauthorized` (the prompt takes over).
   */
  async function api(method, path, { body, signal, headers = {}, allow401 = false } = {}) {
    if (!path.startsWith("/v1/")) throw new Error(`not an API path: ${path}`);
    const sent = authorization(new Headers(headers));
    sent.set("Accept", "application/json, application/problem+json");
    let data;
    if (body !== undefined) {
      sent.set("Content-Type", "application/json");
      data = JSON.stringify(body);
    }
    if ((method === "POST" || method === "PATCH") && !sent.has("Idempotency-Key")) sent.set("Idempotency-Key", uuid());
    const response = await fetch(path, { method, headers: sent, body: data, signal, cache: "no-store" });
    const text = await response.text();
    let json = null;
    try {
      json = text ? JSON.parse(text) : null;
    } catch {
      json = null;
    }
    const result = { status: response.status, ok: response.ok, json, headers: response.headers, problem: null };
    if (!response.ok) result.problem = problemOf(response.status, json, text);
    if (response.status === 401 && !allow401) throw new Unauthorized(result.problem);
    return result;
  }

  function problemOf(status, json, text) {
    if (json && typeof json === "object" && typeof json.title === "string") return json;
    return { type: "about:blank", status, title: `HTTP ${status}`, detail: (text || "").slice(0, 300) };
  }

  /** A problem made from a failed fetch (network down, server stopped). */
  function networkProblem(error) {
    return { type: "network", status: 0, title: "Cannot reach the server", detail: String(error && error.message || error) };
  }

  // ------------------------------------------------------------------ the problem area

  const problemArea = {
    show(problem, context) {
      const area = $("#problem");
      clear(area);
      area.hidden = false;
      area.dataset.type = problem.type || "";
      area.dataset.status = String(problem.status ?? "");
      area.dataset.context = context || "";
      append(area, [
        el("button", { type: "button", class: "problem-close", "aria-label": "Close", text: "×", onclick: () => problemArea.hide() }),
        el("div", { class: "problem-heading" },
          context ? el("span", { class: "problem-context", text: context }) : null,
          el("strong", { class: "problem-title", text: problem.title || "Error" }),
          problem.status ? el("span", { class: "problem-status", text: String(problem.status) }) : null,
          problem.type && problem.type !== "about:blank" ? el("code", { class: "problem-type", text: problem.type }) : null),
        problem.detail ? el("p", { class: "problem-detail", text: problem.detail }) : null,
        Array.isArray(problem.errors) && problem.errors.length
          ? el("ul", { class: "problem-errors" }, problem.errors.map((e) =>
            el("li", {}, el("code", { text: e.pointer || "(body)" }), " ", String(e.detail ?? ""))))
          : null,
      ]);
    },
    hide() {
      const area = $("#problem");
      clear(area);
      area.hidden = true;
      delete area.dataset.type;
      delete area.dataset.status;
      delete area.dataset.context;
    },
  };

  // ------------------------------------------------------------------ views and navigation

  let currentView = null;

  function stopView() {
    if (currentView) currentView.stop();
    currentView = null;
  }

  function navigate(path) {
    if (location.pathname !== path) history.pushState(null, "", path);
    route();
  }

  function sessionPath(id) {
    return `/inspect/sessions/${encodeURIComponent(id)}`;
  }

  /** Starts the view the URL names. */
  function route(firstPage) {
    stopView();
    problemArea.hide();
    const app = clear($("#app"));
    const match = /^\/inspect\/sessions\/([^/]+)\/?$/.exec(location.pathname);
    if (match) {
      let id = null;
      try {
        id = decodeURIComponent(match[1]);
      } catch {
        id = null;
      }
      if (!id || !SESSION_ID.test(id)) {
        document.title = "ModalStack inspector";
        app.append(el("p", { class: "empty", text: "That is not a session id (1–128 of A–Z a–z 0–9 . _ ~ -)." }),
          el("a", { href: "/inspect", "data-nav": true, text: "All sessions" }));
        return;
      }
      currentView = new SessionView(app, id);
    } else {
      currentView = new ListView(app, firstPage);
    }
  }

  document.addEventListener("click", (event) => {
    const link = event.target.closest && event.target.closest("a[data-nav]");
    if (!link || event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    const url = new URL(link.href, location.href);
    if (url.origin !== location.origin) return;
    event.preventDefault();
    navigate(url.pathname);
  });

  window.addEventListener("popstate", () => route());

  /** A refused credential anywhere: stop, forget the key, ask again. */
  function handleFailure(error, context) {
    if (error instanceof Unauthorized) {
      credential.forget();
      showPrompt(error.problem);
      return true;
    }
    if (error && error.name === "AbortError") return true;
    problemArea.show(networkProblem(error), context);
    return false;
  }

  // ------------------------------------------------------------------ start: the credential

  /** Reads the style kinds the server serves beside this script (from its own `ModalStyle`). */
  async function loadStyles() {
    const response = await fetch("/inspect/styles.json");
    if (!response.ok) throw new Error(`GET /inspect/styles.json: HTTP ${response.status}`);
    const styles = (await response.json()).styles;
    STYLES = styles.map((s) => s.name);
    ALERT_LIKE = new Set(styles.filter((s) => s.alertLike).map((s) => s.name));
  }

  /** Asks for the first page of sessions: 401 is the prompt, anything else goes on to the URL's view. */
  async function boot() {
    stopView();
    updateCredentialState();
    let result;
    try {
      if (STYLES.length === 0) await loadStyles();
      result = await api("GET", `/v1/sessions?limit=${LIST_LIMIT}`, { allow401: true });
    } catch (error) {
      problemArea.show(networkProblem(error), "Starting");
      clear($("#app")).append(el("p", { class: "empty" }, "The server did not answer. ",
        el("button", { type: "button", id: "retry-start", text: "Try again", onclick: () => boot() })));
      return;
    }
    if (result.status === 401) {
      const hadKey = Boolean(credential.get());
      credential.forget();
      showPrompt(hadKey ? result.problem : null);
      return;
    }
    if (result.status === 403) {
      // A valid credential that is not an API key: a client token. It cannot list, but it may
      // show its own session's page; anywhere else the inspector needs a key.
      if (/^\/inspect\/sessions\//.test(location.pathname)) {
        route();
        return;
      }
      credential.forget();
      showPrompt(result.problem);
      return;
    }
    route(result.ok ? result.json : undefined);
    if (!result.ok) problemArea.show(result.problem, "Listing sessions");
  }

  function updateCredentialState() {
    const key = credential.get();
    $("#forget-key").hidden = !key;
    $("#credential-state").textContent = key ? "API key set" : "";
  }

  /** Only the prompt: no session data stays in the page. */
  function showPrompt(problem) {
    stopView();
    problemArea.hide();
    updateCredentialState();
    document.title = "ModalStack inspector";
    const input = el("input", { id: "api-key", type: "password", name: "api-key", autocomplete: "current-password",
      required: true, placeholder: "API key", "aria-label": "API key" });
    const form = el("form", { id: "login", class: "login", novalidate: true },
      el("h1", { text: "API key" }),
      el("p", { text: "This server needs an API key. It is kept in this tab (sessionStorage) and sent as a Bearer credential." }),
      problem ? el("p", { id: "login-error", class: "login-error", role: "alert" },
        el("strong", { text: problem.title || "Refused" }), " ", problem.detail || "") : null,
      // A username field (never shown, never sent) keeps password managers and the console content.
      el("input", { type: "text", name: "username", autocomplete: "username", value: "api-key", hidden: true, "aria-hidden": "true", tabindex: "-1" }),
      el("div", { class: "login-row" }, input, el("button", { id: "login-submit", type: "submit", text: "Sign in" })));
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const key = input.value.trim();
      if (!key) return;
      credential.set(key);
      boot();
    });
    clear($("#app")).append(form);
    input.focus();
  }

  $("#forget-key").addEventListener("click", () => {
    credential.forget();
    boot();
  });

  // ------------------------------------------------------------------ the list of sessions

  class ListView {
    constructor(root, firstPage) {
      this.root = root;
      this.rows = new Map(); // id → summary
      this.rowNodes = new Map(); // id → <tr>
      this.next = null; // the page after the last one loaded
      this.loadedMore = false;
      this.stopped = false;
      this.timer = null;
      this.controller = new AbortController();
      document.title = "Sessions · ModalStack inspector";
      this.build();
      this.onVisibility = () => this.schedule(0);
      document.addEventListener("visibilitychange", this.onVisibility);
      if (firstPage) {
        this.takeFirstPage(firstPage);
        this.schedule(LIST_REFRESH_MS);
      } else {
        this.schedule(0);
      }
    }

    build() {
      this.search = el("input", { id: "search", type: "search", placeholder: "Filter by id, or an exact id to open",
        "aria-label": "Session id", autocomplete: "off", spellcheck: "false" });
      this.search.addEventListener("input", () => this.render());
      this.status = el("span", { id: "list-status", class: "muted" });
      this.body = el("tbody", { id: "session-rows" });
      this.empty = el("p", { id: "list-empty", class: "empty", hidden: true });
      this.more = el("button", { id: "load-more", type: "button", text: "Load more", hidden: true, onclick: () => this.loadMore() });
      append(this.root, [
        el("section", { id: "list-view", class: "list-view" },
          el("div", { class: "list-head" },
            el("h1", { text: "Sessions" }),
            el("form", { class: "search", id: "search-form", novalidate: true, onsubmit: (e) => { e.preventDefault(); this.open(); } },
              this.search,
              el("button", { id: "open-session", type: "submit", text: "Open" })),
            this.status),
          el("table", { id: "sessions", class: "sessions" },
            el("thead", {}, el("tr", {},
              [["Session"], ["Version", "num"], ["Updated"], ["Depth", "num"], ["Queue", "num"], ["Top"]]
                .map(([h, kind]) => el("th", { scope: "col", class: kind, text: h })))),
            this.body),
          this.empty,
          this.more),
      ]);
    }

    /** The exact id typed in the search box: its page (whether or not it is listed). */
    open() {
      const id = this.search.value.trim();
      if (!SESSION_ID.test(id)) {
        problemArea.show({ title: "Not a session id", detail: "A session id is 1–128 of A–Z a–z 0–9 . _ ~ -." });
        return;
      }
      navigate(sessionPath(id));
    }

    schedule(ms) {
      clearTimeout(this.timer);
      if (this.stopped) return;
      this.timer = setTimeout(() => this.refresh(), ms);
    }

    async refresh() {
      if (this.stopped) return;
      if (document.visibilityState === "hidden") return; // resumed by visibilitychange
      try {
        const result = await api("GET", `/v1/sessions?limit=${LIST_LIMIT}`, { signal: this.controller.signal });
        if (this.stopped) return;
        if (result.ok) {
          this.takeFirstPage(result.json);
          if ($("#problem").dataset.context === "Listing sessions") problemArea.hide();
        } else {
          problemArea.show(result.problem, "Listing sessions");
        }
      } catch (error) {
        if (this.stopped || handleFailure(error, "Listing sessions")) return;
      }
      this.schedule(LIST_REFRESH_MS);
    }

    /**
     * Merges a fresh first page: what it holds is current; a known row it should hold (as recent
     * as its last one) but lacks is gone (deleted or expired). Older rows, from "Load more", stay.
     */
    takeFirstPage(page) {
      const sessions = Array.isArray(page.sessions) ? page.sessions : [];
      const fresh = new Set(sessions.map((s) => s.id));
      const last = sessions[sessions.length - 1];
      for (const [id, row] of this.rows) {
        if (fresh.has(id)) continue;
        if (!page.next || !last || compareRows(row, last) >= 0) this.rows.delete(id);
      }
      for (const summary of sessions) this.rows.set(summary.id, summary);
      if (!this.loadedMore) this.next = page.next;
      this.render();
    }

    async loadMore() {
      if (!this.next || !this.next.startsWith("/v1/sessions")) return;
      this.more.disabled = true;
      try {
        const result = await api("GET", this.next, { signal: this.controller.signal });
        if (this.stopped) return;
        if (result.ok) {
          for (const summary of result.json.sessions || []) {
            const known = this.rows.get(summary.id);
            if (!known || known.version <= summary.version) this.rows.set(summary.id, summary);
          }
          this.next = result.json.next;
          this.loadedMore = true;
          this.render();
        } else {
          problemArea.show(result.problem, "Loading more sessions");
        }
      } catch (error) {
        handleFailure(error, "Loading more sessions");
      } finally {
        this.more.disabled = false;
      }
    }

    render() {
      const filter = this.search.value.trim().toLowerCase();
      const all = [...this.rows.values()].sort((a, b) => compareRows(b, a));
      const shown = filter ? all.filter((s) => s.id.toLowerCase().includes(filter)) : all;
      const keep = new Set(shown.map((s) => s.id));
      for (const [id, node] of this.rowNodes) {
        if (!keep.has(id)) { node.remove(); this.rowNodes.delete(id); }
      }
      for (const summary of shown) {
        let node = this.rowNodes.get(summary.id);
        const json = JSON.stringify(summary);
        if (!node || node.dataset.json !== json) {
          const fresh = this.row(summary);
          fresh.dataset.json = json;
          if (node) node.replaceWith(fresh);
          node = fresh;
          this.rowNodes.set(summary.id, node);
        } else {
          const ageNode = $(".row-age", node);
          if (ageNode) ageNode.textContent = age(summary.updatedAt);
        }
        this.body.append(node); // moves it into sorted order
      }
      this.empty.hidden = shown.length > 0;
      this.empty.textContent = all.length === 0 ? "No sessions yet." : "No loaded session matches; Open goes to an exact id.";
      this.more.hidden = !this.next;
      this.status.textContent = `${shown.length} of ${all.length} loaded${this.next ? " (more on the server)" : ""} · refreshed ${new Date().toLocaleTimeString()}`;
    }

    row(s) {
      const top = s.top;
      return el("tr", { class: "session-row", "data-session-id": s.id },
        el("td", { class: "row-id" }, el("a", { class: "session-link", href: sessionPath(s.id), "data-nav": true, text: s.id })),
        el("td", { class: "row-version num", text: String(s.version) }),
        el("td", { class: "row-updated" }, timeElement(s.updatedAt), " ", el("span", { class: "row-age muted", text: age(s.updatedAt) })),
        el("td", { class: "row-depth num", text: String(s.depth) }),
        el("td", { class: "row-queue num", text: String(s.queueLength) }),
        el("td", { class: "row-top" }, top
          ? [el("span", { class: "row-top-destination", text: top.destination }), " ",
            el("span", { class: `style-badge style-${top.style}`, text: top.style })]
          : el("span", { class: "muted", text: "empty" })));
    }

    stop() {
      this.stopped = true;
      clearTimeout(this.timer);
      this.controller.abort();
      document.removeEventListener("visibilitychange", this.onVisibility);
    }
  }

  /** The listing's order: updatedAt, then id (both ascending here; the list shows it reversed). */
  function compareRows(a, b) {
    if (a.updatedAt !== b.updatedAt) return a.updatedAt < b.updatedAt ? -1 : 1;
    if (a.id === b.id) return 0;
    return a.id < b.id ? -1 : 1;
  }

  // ------------------------------------------------------------------ navigation: plans and replay

  const isContainer = (p) => !ALERT_LIKE.has(p.style);

  /** A level's path, `[]` when the member is absent. */
  const pathOf = (holder) => (holder && Array.isArray(holder.path) ? holder.path : []);

  /** The ids a plan is computed from: `{path: [entry ids], stack: [{id, path: [entry ids] or null}]}`. */
  function navigationIds(session) {
    return {
      path: pathOf(session).map((e) => e.id),
      stack: (session.stack || []).map((p) => ({ id: p.id, path: isContainer(p) ? pathOf(p).map((e) => e.id) : null })),
    };
  }

  function commonPrefix(a, b) {
    let n = 0;
    while (n < a.length && n < b.length && a[n] === b[n]) n += 1;
    return n;
  }

  /**
   * The server's plan (nav-spec "Transition plans"), computed here from ids: dismiss the modals not
   * kept, top-down; pop the entries not kept of the kept levels, top-most level first, each top-down;
   * push the new entries of the kept levels, root first, bottom-up; present each new modal bottom-up,
   * each followed by pushes of its path.
   */
  function navigationPlan(from, to) {
    const kept = commonPrefix(from.stack.map((p) => p.id), to.stack.map((p) => p.id));
    const steps = [];
    for (let i = from.stack.length - 1; i >= kept; i -= 1) steps.push({ dismiss: from.stack[i].id });
    const levels = [{ level: "root", from: from.path, to: to.path }];
    for (let i = 0; i < kept; i += 1) {
      if (from.stack[i].path && to.stack[i].path) levels.push({ level: from.stack[i].id, from: from.stack[i].path, to: to.stack[i].path });
    }
    for (const level of levels.slice().reverse()) {
      const same = commonPrefix(level.from, level.to);
      for (let j = level.from.length - 1; j >= same; j -= 1) steps.push({ pop: level.from[j], level: level.level });
    }
    for (const level of levels) {
      for (let j = commonPrefix(level.from, level.to); j < level.to.length; j += 1) steps.push({ push: level.to[j], level: level.level });
    }
    for (let i = kept; i < to.stack.length; i += 1) {
      steps.push({ present: to.stack[i].id });
      for (const entry of to.stack[i].path || []) steps.push({ push: entry, level: to.stack[i].id });
    }
    return steps;
  }

  /** A session before its first change: what a change with `sessionCreated` starts from. */
  function emptySession(id) {
    return { id, version: 0, createdAt: null, updatedAt: null, path: [], stack: [], top: null, queue: [], ttl: null, expiresAt: null };
  }

  const sameIds = (a, b) => Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => x === b[i]);

  /**
   * The one replay: the session after `change` (`{version, at, events, stack, path, paths}`, as the
   * stream sends it and the log pages hold it), from the session before it, by the contract's
   * "Applying a change" rules, without asking the server. `before` is not modified (the result
   * shares what did not change). Throws an Error saying why when the change does not follow from
   * `before` (a missed version, an event naming what is not there, ids that are not the change's).
   */
  function replay(before, change) {
    const events = Array.isArray(change.events) ? change.events : [];
    const created = events.some((e) => e.type === "sessionCreated");
    const base = created ? emptySession(before.id) : before;
    if (change.version !== base.version + 1) throw new Error(`version ${change.version} does not follow ${base.version}`);
    const next = { ...base, path: pathOf(base).slice(), stack: base.stack.slice(), queue: base.queue.slice() };
    const holds = (id) => next.stack.some((p) => p.id === id) || next.queue.some((p) => p.id === id);
    const indexIn = (list, id) => list.findIndex((item) => item.id === id);
    // A level's path to change: the root's, or a container's on the stack (copied before it changes).
    const withPath = (level, edit) => {
      if (level === "root") {
        next.path = edit(next.path.slice());
        return;
      }
      const index = indexIn(next.stack, level);
      if (index < 0 || !isContainer(next.stack[index])) throw new Error(`no container ${level} on the stack`);
      next.stack[index] = { ...next.stack[index], path: edit(pathOf(next.stack[index]).slice()) };
    };
    for (const e of events) {
      switch (e.type) {
        case "sessionCreated":
          if (typeof e.ttl !== "number") throw new Error("sessionCreated without a ttl");
          next.createdAt = change.at;
          next.ttl = e.ttl;
          break;
        case "presented":
          if (holds(e.presentationId)) throw new Error(`presented ${e.presentationId}: already there`);
          next.stack.push(e.presentation);
          break;
        case "queued":
          if (holds(e.presentationId) || !(e.position >= 0 && e.position <= next.queue.length)) throw new Error(`queued ${e.presentationId} at ${e.position}`);
          next.queue.splice(e.position, 0, e.presentation);
          break;
        case "promoted": {
          const index = indexIn(next.queue, e.presentationId);
          if (index < 0) throw new Error(`promoted ${e.presentationId}: not queued`);
          next.queue.splice(index, 1);
          next.stack.push(e.presentation);
          break;
        }
        case "updated":
        case "dismissed": {
          const list = indexIn(next.stack, e.presentationId) >= 0 ? next.stack : next.queue;
          const index = indexIn(list, e.presentationId);
          if (index < 0) throw new Error(`${e.type} ${e.presentationId}: not on the stack or in the queue`);
          if (e.type === "updated") list[index] = e.presentation;
          else list.splice(index, 1);
          break;
        }
        case "pushed":
          withPath(e.level, (path) => {
            if (indexIn(path, e.entryId) >= 0) throw new Error(`pushed ${e.entryId}: already in ${e.level}`);
            return [...path, e.entry];
          });
          break;
        case "popped":
        case "entryUpdated":
          withPath(e.level, (path) => {
            const index = indexIn(path, e.entryId);
            if (index < 0) throw new Error(`${e.type} ${e.entryId}: not in ${e.level}`);
            if (e.type === "popped") path.splice(index, 1);
            else path[index] = e.entry;
            return path;
          });
          break;
        case "replaced":
        case "navigated":
          break;
        default:
          throw new Error(`an event this page does not know: ${e.type}`);
      }
    }
    next.version = change.version;
    next.updatedAt = change.at;
    next.top = next.stack.length ? next.stack[next.stack.length - 1] : null;
    next.expiresAt = typeof next.ttl === "number" ? new Date(Date.parse(change.at) + next.ttl * 1000).toISOString() : null;
    // The change's own ids say what it left: a replay that disagrees is not trusted.
    const ids = navigationIds(next);
    if (Array.isArray(change.stack) && !sameIds(change.stack, ids.stack.map((p) => p.id))) throw new Error(`the stack is not the change's ${JSON.stringify(change.stack)}`);
    if (Array.isArray(change.path) && !sameIds(change.path, ids.path)) throw new Error(`the root path is not the change's ${JSON.stringify(change.path)}`);
    if (change.paths && typeof change.paths === "object") {
      const containers = ids.stack.filter((p) => p.path);
      const listed = Object.keys(change.paths);
      if (listed.length !== containers.length || containers.some((p) => !sameIds(change.paths[p.id], p.path))) {
        throw new Error(`the containers' paths are not the change's ${JSON.stringify(change.paths)}`);
      }
    }
    return next;
  }

  /** A sheet's height in the frame for a detent (`large` is given: it depends on the level). */
  function detentHeight(detent, large) {
    if (detent === "large") return large;
    if (detent === "medium") return FRAME.height / 2;
    const match = /^(fraction|height):(.+)$/.exec(detent);
    const x = match ? Number(match[2]) : NaN;
    if (!(x > 0)) return 0;
    return Math.min(large, Math.max(80, match[1] === "fraction" ? FRAME.height * x : x));
  }

  // ------------------------------------------------------------------ the event stream

  /**
   * Reads a text/event-stream body (HTML's SSE format): calls onEvent({type, data, id}) per event,
   * onActivity() for every chunk (heartbeats included). Returns when the body ends.
   */
  async function readEventStream(body, onEvent, onActivity) {
    const reader = body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    let type = "";
    let data = [];
    let id = null;
    const line = (text) => {
      if (text === "") {
        if (data.length) onEvent({ type: type || "message", data: data.join("\n"), id });
        type = "";
        data = [];
        id = null;
        return;
      }
      if (text.startsWith(":")) return; // a comment: the heartbeat
      const colon = text.indexOf(":");
      const field = colon < 0 ? text : text.slice(0, colon);
      let value = colon < 0 ? "" : text.slice(colon + 1);
      if (value.startsWith(" ")) value = value.slice(1);
      if (field === "event") type = value;
      else if (field === "data") data.push(value);
      else if (field === "id" && !value.includes("\0")) id = value;
    };
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      onActivity();
      buffer += decoder.decode(value, { stream: true });
      for (;;) {
        const match = /\r\n|\r|\n/.exec(buffer);
        if (!match) break;
        // A CR at the very end may be the first half of a CRLF: wait for the next chunk.
        if (match[0] === "\r" && match.index === buffer.length - 1) break;
        line(buffer.slice(0, match.index));
        buffer = buffer.slice(match.index + match[0].length);
      }
    }
  }

  // ------------------------------------------------------------------ the session view

  class SessionView {
    constructor(root, id) {
      this.root = root;
      this.id = id;
      this.base = `/v1/sessions/${encodeURIComponent(id)}`;
      this.live = null; // the session as last read or replayed
      this.history = null; // {version, session} while an old version is shown
      this.presentations = new Map(); // id → the newest state seen (for labels)
      this.entries = new Map(); // path entry id → the newest state seen (for labels)
      this.log = new Map(); // version → {version, at, events, stack, path, paths} (ids, or null when not known)
      this.states = new Map(); // version → the session after it, replayed from the log
      this.base0 = null; // {version, session}: the state at the first logged version, when the log was pruned
      this.versions = new Map(); // version → the session at it, as GET …/versions/{n} answered (it never changes)
      this.asked = null; // the version last clicked in the timeline, until it is shown
      this.lastEventId = null;
      this.wanted = 0; // the newest version a change event announced
      this.refreshing = false;
      this.rereads = 0; // whole-session reads after a change that could not be replayed
      this.replayed = 0; // changes applied by replay
      this.stopped = false;
      this.timers = new Set();
      this.controller = new AbortController();
      this.nodeData = new WeakMap(); // card or path entry node → {json}
      this.timelineShown = TIMELINE_SHOWN;
      this.pushLevel = null; // the level chosen in the push form, or null: the server's default
      this.resolved = null; // the URL whose resolution the link box shows
      document.title = `${id} · ModalStack inspector`;
      this.build();
      this.follow();
      this.loadDestinations();
    }

    stop() {
      this.stopped = true;
      this.controller.abort();
      this.streamController?.abort();
      for (const timer of this.timers) clearTimeout(timer);
      this.timers.clear();
    }

    later(ms, action) {
      const timer = setTimeout(() => { this.timers.delete(timer); if (!this.stopped) action(); }, ms);
      this.timers.add(timer);
    }

    // ---------------------------------------------------------------- layout

    build() {
      this.rootLevel = el("div", { class: "app-base", "data-level": "root" },
        el("div", { class: "status-bar" }, el("span", { text: "9:41" }), el("span", { text: "●●● ▮" })),
        el("div", { class: "nav-bar", "data-level": "root", hidden: true }),
        el("div", { class: "level-body", "data-level": "root" },
          el("div", { class: "level-root" },
            el("div", { class: "app-title", text: "App" }),
            el("div", { class: "app-placeholder" }),
            el("div", { class: "app-placeholder short" }),
            el("div", { class: "app-placeholder" }))));
      this.screen = el("div", { id: "screen", class: "screen" }, this.rootLevel);
      this.frameNote = el("p", { id: "frame-note", class: "frame-note", hidden: true });
      this.replayNote = el("p", { id: "replay-note", class: "frame-note replay-note", hidden: true });
      this.queue = el("ol", { id: "queue", class: "queue" });
      this.timeline = el("ol", { id: "timeline", class: "timeline" });
      this.timelineMore = el("button", { id: "timeline-more", type: "button", text: "Show older", hidden: true,
        onclick: () => { this.timelineShown += TIMELINE_SHOWN; this.renderTimeline(); } });
      this.banner = el("div", { id: "history-banner", class: "history-banner", hidden: true });
      this.presentSection = el("section", { id: "present-section", class: "panel" }, el("h2", { text: "Present" }),
        el("p", { class: "muted", text: "Loading the destinations…" }));
      this.pushSection = el("section", { id: "push-section", class: "panel" }, el("h2", { text: "Push" }),
        el("p", { class: "muted", text: "Loading the destinations…" }));
      this.sessionJSON = el("pre", { id: "session-json", class: "payload session-json" });
      this.jsonPanel = el("details", { id: "session-json-panel", class: "panel", ontoggle: () => this.renderJSON() },
        el("summary", {}, "Session JSON ", el("span", { class: "muted", text: "(as this page holds it, replayed from the stream)" })),
        this.sessionJSON);
      append(this.root, [
        el("section", { id: "session-view", class: "session-view", "data-session-id": this.id, "data-rereads": "0", "data-replayed": "0" },
          el("div", { class: "session-head" },
            el("a", { id: "back", href: "/inspect", "data-nav": true, text: "← All sessions" }),
            el("h1", {}, "Session ", el("code", { id: "session-id", text: this.id })),
            el("dl", { class: "session-facts" },
              el("dt", { text: "version" }), el("dd", { id: "session-version", text: "—" }),
              el("dt", { text: "updated" }), el("dd", { id: "session-updated", text: "—" }),
              el("dt", { text: "expires" }), el("dd", { id: "session-expires", text: "—" }),
              el("dt", { text: "depth" }), el("dd", { id: "session-depth", text: "—" }),
              el("dt", { text: "stream" }), el("dd", { id: "stream-status", "data-state": "connecting", text: "connecting" }))),
          this.banner,
          el("div", { class: "session-body" },
            el("div", { class: "phone-column" },
              el("div", { id: "phone", class: "phone" }, this.screen),
              this.frameNote,
              this.replayNote),
            el("div", { class: "side-column" },
              el("section", { id: "queue-section", class: "panel" },
                el("h2", {}, "Queue ", el("span", { id: "queue-count", class: "muted" })), this.queue),
              this.buildLinkBox(),
              this.presentSection,
              this.pushSection,
              this.jsonPanel),
            el("div", { class: "timeline-column" },
              el("section", { id: "timeline-section", class: "panel" },
                el("h2", {}, "Timeline ", el("span", { class: "muted", text: "(click a version to see its navigation)" })),
                this.timeline, this.timelineMore)))),
      ]);
      this.renderQueue([]);
    }

    setStreamState(state, text) {
      const node = $("#stream-status");
      if (!node) return;
      node.dataset.state = state;
      node.textContent = text || state;
    }

    // ---------------------------------------------------------------- following

    async follow() {
      let attempt = 0;
      while (!this.stopped) {
        const controller = new AbortController();
        this.streamController = controller;
        let silence = null;
        const watchdog = () => {
          clearTimeout(silence);
          silence = setTimeout(() => controller.abort(), STREAM_SILENCE_MS);
        };
        try {
          const headers = authorization(new Headers({ Accept: "text/event-stream" }));
          if (this.lastEventId !== null) headers.set("Last-Event-ID", this.lastEventId);
          watchdog();
          const response = await fetch(`${this.base}/events/stream`, { headers, signal: controller.signal, cache: "no-store" });
          if (response.status === 401) {
            const text = await response.text();
            let json = null;
            try { json = JSON.parse(text); } catch { json = null; }
            throw new Unauthorized(problemOf(401, json, text));
          }
          if (!response.ok) {
            const text = await response.text();
            let json = null;
            try { json = JSON.parse(text); } catch { json = null; }
            if (response.status === 404) {
              this.missing(problemOf(404, json, text));
            } else {
              problemArea.show(problemOf(response.status, json, text), "Following the session");
            }
            this.setStreamState("retrying", `HTTP ${response.status}, retrying`);
          } else {
            attempt = 0;
            this.setStreamState("live");
            await readEventStream(response.body, (event) => this.onStreamEvent(event), watchdog);
            if (!this.stopped) this.setStreamState("reconnecting");
          }
        } catch (error) {
          if (this.stopped) return;
          if (error instanceof Unauthorized) {
            handleFailure(error);
            return;
          }
          this.setStreamState("reconnecting");
        } finally {
          clearTimeout(silence);
        }
        // A short backoff with jitter: 0.25 s, 0.5 s, 1 s, 2 s, then 4 s.
        const delay = Math.min(4000, 250 * 2 ** attempt) * (0.8 + Math.random() * 0.4);
        attempt = Math.min(attempt + 1, 4);
        await sleep(delay, this.controller.signal);
      }
    }

    onStreamEvent(event) {
      if (this.stopped) return;
      let data = null;
      try {
        data = JSON.parse(event.data);
      } catch {
        return;
      }
      if (event.id !== null && /^[0-9]+$/.test(event.id)) this.lastEventId = event.id;
      switch (event.type) {
        case "session":
        case "reset":
          // The log is read once the stream has a version: changes after it come from the stream.
          this.apply(data, { authoritative: true });
          this.loadLog();
          break;
        case "change":
          this.takeChange(data);
          this.advance(data);
          break;
        case "sessionDeleted":
          this.lastEventId = null;
          this.missing({ title: "Session deleted", detail: `The session ${this.id} was deleted; waiting for it to be written again.` });
          break;
        case "tokenExpired":
          this.streamController?.abort(); // reconnect
          break;
        default:
          break;
      }
    }

    /**
     * A change from the stream, applied to the session shown by `replay`: no read. Only a change
     * that does not follow (a missed version, or a record that disagrees with the state it applies
     * to) makes the page read the whole session, and says so under the frame.
     */
    advance(change) {
      if (!change || typeof change.version !== "number") return;
      if (this.live && change.version <= this.live.version) return; // an answer already showed it
      let next;
      try {
        next = replay(this.live || emptySession(this.id), change);
      } catch (error) {
        const text = `Version ${change.version} could not be replayed (${error.message}); the session was read instead.`;
        this.replayNote.hidden = false;
        this.replayNote.textContent = text;
        $("#session-view").dataset.replayError = text;
        this.wanted = Math.max(this.wanted, change.version);
        this.refresh();
        return;
      }
      this.replayed += 1;
      $("#session-view").dataset.replayed = String(this.replayed);
      this.show(next, { animate: true });
    }

    /** Reads the session until it is at least at the newest version a change announced. */
    async refresh() {
      if (this.refreshing) return;
      this.refreshing = true;
      try {
        while (!this.stopped && (!this.live || this.live.version < this.wanted)) {
          this.rereads += 1;
          $("#session-view").dataset.rereads = String(this.rereads);
          const result = await api("GET", this.base, { signal: this.controller.signal });
          if (this.stopped) return;
          if (result.ok) {
            this.apply(result.json);
            if (result.json.version < this.wanted) await sleep(50, this.controller.signal);
          } else if (result.status === 404) {
            this.missing(result.problem);
            return;
          } else {
            problemArea.show(result.problem, "Reading the session");
            return;
          }
        }
      } catch (error) {
        handleFailure(error, "Reading the session");
      } finally {
        this.refreshing = false;
      }
    }

    /** The session is not there (never written, expired, deleted). */
    missing(problem) {
      this.live = null;
      this.wanted = 0;
      this.versions.clear(); // a session made again under the id has versions of its own
      this.frameNote.hidden = false;
      this.frameNote.textContent = `${problem.title}${problem.detail ? `: ${problem.detail}` : ""}`;
      $("#session-version").textContent = "—";
      $("#session-updated").textContent = "—";
      $("#session-expires").textContent = "—";
      $("#session-depth").textContent = "—";
      if (!this.history) this.renderNavigation(emptySession(this.id), { readonly: false });
      this.renderQueue([]);
      this.renderLevels();
      this.renderJSON();
    }

    /** Shows a whole session (the stream's first event, an answer, a read), unless older than what is shown. */
    apply(session, { authoritative = false } = {}) {
      if (!session || typeof session.version !== "number") return;
      if (!authoritative && this.live && session.version <= this.live.version) return;
      this.show(session, { animate: Boolean(this.live) }); // a page opened on a session shows it at once
    }

    show(session, { animate }) {
      this.live = session;
      this.frameNote.hidden = true;
      this.remember(session);
      $("#session-version").textContent = String(session.version);
      clear($("#session-updated")).append(timeElement(session.updatedAt));
      clear($("#session-expires")).append(timeElement(session.expiresAt));
      $("#session-depth").textContent = String(session.stack.length);
      $("#session-view").dataset.version = String(session.version);
      if (!this.history) {
        this.renderNavigation(session, { readonly: false, animate });
        this.renderQueue(session.queue);
      }
      this.renderLevels();
      this.renderJSON();
    }

    /** Keeps what a session names, for the labels of the timeline. */
    remember(session) {
      for (const p of [...session.stack, ...session.queue]) {
        this.presentations.set(p.id, p);
        for (const entry of pathOf(p)) this.entries.set(entry.id, entry);
      }
      for (const entry of pathOf(session)) this.entries.set(entry.id, entry);
    }

    rememberEvent(event) {
      if (event.presentation) this.presentations.set(event.presentationId, event.presentation);
      if (event.entry) this.entries.set(event.entryId, event.entry);
    }

    renderJSON() {
      if (!this.jsonPanel.open) return;
      this.sessionJSON.textContent = this.live ? prettyJSON(this.live) : "(no session)";
    }

    /** `root`, or a container's destination: how the page names a level. */
    levelName(level) {
      if (level === "root") return "root";
      const p = this.presentations.get(level);
      return p ? p.destination : shortId(level);
    }

    // ---------------------------------------------------------------- the frame

    /**
     * Draws a session's navigation in the frame along the transition plan from what it shows:
     * leaving modals and path entries are marked at once (they lose their data-presentation-id or
     * data-entry-id) and leave one after another; then the new ones come in, in the plan's order
     * (dismiss, pop, push, present). The DOM's ids are right at once; only the animation lags.
     */
    renderNavigation(session, { readonly, animate = true }) {
      const screen = this.screen;
      const cards = new Map();
      for (const node of screen.querySelectorAll(":scope > .entry[data-presentation-id]")) cards.set(node.dataset.presentationId, node);
      const shown = {
        path: this.entryIds(this.rootLevel),
        stack: [...cards].map(([id, node]) => ({ id, path: node.classList.contains("card") ? this.entryIds(node) : null })),
      };
      const plan = navigationPlan(shown, navigationIds(session));
      const leaving = (node, attribute) => {
        node.dataset[attribute === "data-presentation-id" ? "leavingId" : "leavingEntryId"] = node.getAttribute(attribute);
        node.removeAttribute(attribute);
        node.classList.add("leaving-pending");
        for (const control of node.querySelectorAll("button, input")) control.disabled = true;
        if (!animate) node.remove();
        return node;
      };
      const leavingNodes = new Map(); // a plan step's key → the node that leaves
      for (const s of plan) {
        if (s.dismiss) {
          leavingNodes.set(`dismiss ${s.dismiss}`, leaving(cards.get(s.dismiss), "data-presentation-id"));
          cards.delete(s.dismiss);
        } else if (s.pop) {
          const node = this.entryNode(s.level, s.pop);
          if (node) leavingNodes.set(`pop ${s.level} ${s.pop}`, leaving(node, "data-entry-id"));
        }
      }

      let containerLevel = 0;
      let belowTop = null; // the top edge of the container below, in frame px
      session.stack.forEach((presentation, index) => {
        const json = JSON.stringify({ ...presentation, path: undefined }) + (readonly ? "#readonly" : "");
        let node = cards.get(presentation.id);
        if (node && this.nodeData.get(node)?.json !== json) {
          const fresh = this.entry(presentation, readonly);
          fresh.className = node.className; // keeps an entrance in progress
          const body = $(":scope > .level-body", node);
          const freshBody = $(":scope > .level-body", fresh);
          if (body && freshBody) freshBody.append(...body.querySelectorAll(":scope > .path-entry")); // its path: kept, reconciled below
          node.replaceWith(fresh);
          node = fresh;
        }
        if (!node) {
          node = this.entry(presentation, readonly);
          if (animate) node.classList.add("entering");
          screen.append(node);
        }
        this.nodeData.set(node, { json });
        node.dataset.index = String(index);
        const coveredBy = session.stack.slice(index + 1).filter(isContainer).length;
        node.classList.toggle("covered", isContainer(presentation) && coveredBy > 0);
        if (isContainer(presentation)) {
          belowTop = this.place(node, presentation, containerLevel, belowTop);
          containerLevel += 1;
          this.renderPath(node, presentation.id, presentation.destination, pathOf(presentation), readonly, animate);
        }
      });
      this.renderPath(this.rootLevel, "root", "App", pathOf(session), readonly, animate);
      this.keepHeadersClear(screen);
      screen.classList.toggle("readonly", readonly);
      if (!animate) return;

      void screen.offsetWidth; // the entering states are laid out before they are left
      plan.forEach((s, step) => {
        const at = step * STEP_MS;
        const node = leavingNodes.get(s.dismiss ? `dismiss ${s.dismiss}` : `pop ${s.level} ${s.pop}`);
        if (s.dismiss || s.pop) {
          if (!node) return;
          this.later(at, () => node.classList.add("leaving"));
          this.later(at + STEP_MS + 30, () => node.remove());
        } else if (s.present) {
          // The node may be replaced meanwhile (its presentation changed): found by id then.
          this.later(at, () => this.liveNode(s.present)?.classList.remove("entering"));
        } else if (s.push) {
          this.later(at, () => this.entryNode(s.level, s.push)?.classList.remove("entering"));
        }
      });
    }

    /**
     * Moves the alert-like box (always the top) off the headers of the containers under it, so
     * that their destination, lock and × stay readable: into the gap between headers nearest to
     * where the box would be, if it fits in one. Measured with offsets, which transforms (the
     * entrance's slide) do not change.
     */
    keepHeadersClear(screen) {
      const layer = [...screen.querySelectorAll(":scope > .entry.modal[data-presentation-id]")].pop();
      if (!layer || !layer.firstElementChild) return;
      layer.style.paddingTop = "";
      layer.style.paddingBottom = "";
      const box = layer.firstElementChild;
      const boxTop = box.offsetTop;
      const boxBottom = boxTop + box.offsetHeight;
      const margin = 8;
      const headers = [...screen.querySelectorAll(":scope > .entry.card[data-presentation-id] > .card-head")]
        .map((head) => ({ top: head.parentElement.offsetTop + head.offsetTop - margin,
          bottom: head.parentElement.offsetTop + head.offsetTop + head.offsetHeight + margin }))
        .sort((a, b) => a.top - b.top);
      if (!headers.some((h) => h.top < boxBottom && boxTop < h.bottom)) return;
      const gaps = [];
      let top = FRAME.top;
      for (const header of headers) {
        if (header.top > top) gaps.push({ top, bottom: header.top });
        top = Math.max(top, header.bottom);
      }
      gaps.push({ top, bottom: FRAME.height });
      const middle = (boxTop + boxBottom) / 2;
      const fitting = gaps.filter((g) => g.bottom - g.top >= boxBottom - boxTop);
      if (!fitting.length) return;
      const distance = (g) => Math.abs(Math.min(Math.max(middle, g.top), g.bottom) - middle);
      const gap = fitting.reduce((best, g) => (distance(g) < distance(best) ? g : best));
      layer.style.paddingTop = `${gap.top}px`;
      layer.style.paddingBottom = `${FRAME.height - gap.bottom}px`;
    }

    liveNode(id) {
      for (const node of this.screen.querySelectorAll(":scope > .entry[data-presentation-id]")) {
        if (node.dataset.presentationId === id) return node;
      }
      return null;
    }

    /** The node holding a level: the app's base for `root`, else the container's card. */
    levelNode(level) {
      return level === "root" ? this.rootLevel : this.liveNode(level);
    }

    entryNodes(holder) {
      return holder ? [...holder.querySelectorAll(":scope > .level-body > .path-entry[data-entry-id]")] : [];
    }

    entryIds(holder) {
      return this.entryNodes(holder).map((node) => node.dataset.entryId);
    }

    entryNode(level, id) {
      return this.entryNodes(this.levelNode(level)).find((node) => node.dataset.entryId === id) || null;
    }

    /**
     * A level's path inside its holder: the pushed screens over the level's own content, the top
     * one in front; the bar above them has Back and the back stack as a breadcrumb. Entries that
     * stay keep their node; new ones start `entering` when animated.
     */
    renderPath(holder, level, rootLabel, path, readonly, animate) {
      const body = $(":scope > .level-body", holder);
      const nodes = new Map(this.entryNodes(holder).map((node) => [node.dataset.entryId, node]));
      path.forEach((entry, index) => {
        const json = JSON.stringify(entry) + (readonly ? "#readonly" : "");
        let node = nodes.get(entry.id);
        if (node && this.nodeData.get(node)?.json !== json) {
          const fresh = this.pathEntry(level, entry);
          fresh.className = node.className;
          node.replaceWith(fresh);
          node = fresh;
        }
        if (!node) {
          node = this.pathEntry(level, entry);
          if (animate) node.classList.add("entering");
          body.append(node);
        }
        this.nodeData.set(node, { json });
        node.dataset.position = String(index);
        const top = index === path.length - 1;
        node.classList.toggle("top", top);
        node.classList.toggle("behind", !top);
        node.inert = !top;
      });
      const root = $(":scope > .level-root", body);
      root.classList.toggle("behind", path.length > 0);
      root.inert = path.length > 0;
      holder.dataset.pathLength = String(path.length);
      this.renderNavBar($(":scope > .nav-bar", holder), level, rootLabel, path, readonly);
    }

    /** Back (pops the top entry), and the breadcrumb: a tap on an earlier screen pops back to it. */
    renderNavBar(bar, level, rootLabel, path, readonly) {
      clear(bar);
      bar.hidden = path.length === 0;
      if (!path.length) return;
      const top = path[path.length - 1];
      const previous = path.length > 1 ? path[path.length - 2].destination : rootLabel;
      const where = level === "root" ? "root" : rootLabel;
      const crumb = (label, attributes, pop) => el("li", { class: "crumb", ...attributes },
        pop ? el("button", { type: "button", class: "crumb-button", text: label, disabled: readonly, title: `Back to ${label}`, onclick: pop })
          : el("span", { class: "crumb-current", "aria-current": "page", text: label }));
      const crumbs = [crumb(rootLabel, { "data-root": "true" }, () => this.pop(level, { all: true }, `Popping ${where} to its root`))];
      path.forEach((entry, index) => {
        crumbs.push(el("li", { class: "crumb-sep", "aria-hidden": "true", text: " › " }));
        const last = index === path.length - 1;
        crumbs.push(crumb(entry.destination, { "data-entry-id": entry.id },
          last ? null : () => this.pop(level, { to: entry.id }, `Popping ${where} back to ${entry.destination}`)));
      });
      append(bar, [
        el("button", { type: "button", class: "path-back", "data-level": level, disabled: readonly,
          "aria-label": `Back to ${previous}`, title: `Pop ${top.destination} (POST …/path/pop)`, text: `‹ ${previous}`,
          onclick: () => this.pop(level, {}, `Popping ${top.destination} from ${where}`) }),
        el("ol", { class: "breadcrumb", "aria-label": "Back stack" }, crumbs),
      ]);
    }

    /** A pushed screen: its destination, identity and payload. */
    pathEntry(level, entry) {
      const empty = !entry.payload || Object.keys(entry.payload).length === 0;
      return el("div", { class: "path-entry", "data-entry-id": entry.id, "data-destination": entry.destination, "data-level": level },
        el("div", { class: "entry-head" },
          el("span", { class: "style-badge style-push", text: "push" }),
          el("strong", { class: "entry-destination", text: entry.destination })),
        el("div", { class: "identity" },
          el("span", { class: "label", text: "key" }), el("code", { class: "key", text: entry.key }),
          el("span", { class: "label", text: "id" }), el("code", { class: "eid", title: entry.id, text: shortId(entry.id) }),
          el("span", { class: "label", text: "pushed" }), timeElement(entry.pushedAt, "pushed-at")),
        el("pre", { class: empty ? "entry-payload empty-payload" : "entry-payload", text: empty ? "{}" : prettyJSON(entry.payload) }));
    }

    /**
     * A container's geometry; returns the top edge the next container must stay below. A sheet
     * rests at its smallest detent, but never hides the header (destination, lock, ×) of the
     * container under it: it starts at least HEADER px lower. A cover fills the frame; a popover
     * floats a little lower per level.
     */
    place(node, presentation, level, belowTop) {
      if (presentation.style === "sheet") {
        const large = FRAME.height - FRAME.top;
        const heights = (presentation.detents || []).map((d) => detentHeight(d, large)).filter((h) => h > 0);
        const natural = FRAME.height - (heights.length ? Math.min(...heights) : large);
        const top = Math.min(FRAME.height - 120, Math.max(natural, belowTop === null ? 0 : belowTop + HEADER));
        node.style.top = `${top}px`;
        node.dataset.height = String(Math.round(FRAME.height - top));
        return top;
      }
      if (presentation.style === "popover") {
        node.style.top = `${96 + 18 * Math.min(level, 6)}px`;
        return belowTop;
      }
      return 0; // a full-screen cover
    }

    entry(p, readonly) {
      return ALERT_LIKE.has(p.style) ? this.modal(p, readonly) : this.card(p, readonly);
    }

    commonAttributes(p, className) {
      return { class: className, "data-presentation-id": p.id, "data-style": p.style, "data-destination": p.destination,
        "data-locked": p.locked ? "true" : "false" };
    }

    closeButton(p, readonly) {
      return el("button", { type: "button", class: "close", "data-action": "dismiss", "aria-label": `Dismiss ${p.destination}`,
        title: p.locked ? "Locked: the server refuses this without force" : "Dismiss (and everything above it)",
        text: "×", disabled: readonly, onclick: () => this.dismiss(p) });
    }

    lockMark(p) {
      return p.locked ? el("span", { class: "lock", title: "Locked: removed only with force" }, lockIcon(), " locked") : null;
    }

    identity(p) {
      return el("div", { class: "identity" },
        el("span", { class: "label", text: "key" }), el("code", { class: "key", text: p.key }),
        el("span", { class: "label", text: "id" }), el("code", { class: "pid", title: p.id, text: shortId(p.id) }));
    }

    payloadBlock(p) {
      const empty = !p.payload || Object.keys(p.payload).length === 0;
      return el("pre", { class: empty ? "payload empty-payload" : "payload", text: empty ? "{}" : prettyJSON(p.payload) });
    }


    /** A container: its header, then its level: the bar of its path and the screens, its own content first. */
    card(p, readonly) {
      const kind = p.style === "fullScreenCover" ? "cover" : p.style;
      const detents = p.style === "sheet" && p.detents && p.detents.length
        ? el("div", { class: "detents" }, p.detents.map((d) => el("span", { class: "detent", text: d })))
        : null;
      return el("div", this.commonAttributes(p, `entry card ${kind}`),
        p.style === "sheet" ? el("div", { class: "grabber" }) : null,
        p.style === "popover" ? el("div", { class: "arrow" }) : null,
        el("div", { class: "card-head" },
          el("span", { class: `style-badge style-${p.style}`, text: p.style }),
          el("strong", { class: "destination", text: p.destination }),
          this.lockMark(p),
          this.closeButton(p, readonly)),
        el("div", { class: "nav-bar", "data-level": p.id, hidden: true }),
        el("div", { class: "level-body", "data-level": p.id },
          el("div", { class: "level-root" },
            this.identity(p),
            detents,
            p.style === "sheet" && p.interactiveDismissDisabled ? el("div", { class: "note", text: "interactive dismiss disabled" }) : null,
            this.payloadBlock(p))));
    }

    modal(p, readonly) {
      const layer = el("div", this.commonAttributes(p, `entry modal ${p.style === "confirmationDialog" ? "confirmation" : p.style}-layer`));
      if (p.style === "alert" || p.style === "confirmationDialog") layer.append(this.alertBox(p, readonly));
      else if (p.style === "progress") layer.append(this.progressBox(p, readonly));
      else layer.append(this.dialogBox(p, readonly));
      return layer;
    }

    alertBox(p, readonly) {
      const buttons = Array.isArray(p.buttons) ? p.buttons : [];
      const button = (b) => el("button", { type: "button", class: `alert-button role-${b.role}`, "data-role": b.role,
        "data-button-id": b.id, text: b.label, disabled: readonly, onclick: () => this.answer(p, b) });
      const cancel = buttons.filter((b) => b.role === "cancel");
      const others = buttons.filter((b) => b.role !== "cancel");
      const text = el("div", { class: "alert-text" },
        el("div", { class: "alert-title", text: p.title }),
        p.message !== undefined ? el("div", { class: "alert-message", text: p.message }) : null,
        el("div", { class: "alert-meta" }, el("span", { class: "destination", text: p.destination }), this.lockMark(p)));
      const hasPayload = p.payload && Object.keys(p.payload).length > 0;
      if (p.style === "confirmationDialog") {
        return el("div", { class: "alert action-sheet", role: "alertdialog", "aria-label": p.title },
          el("div", { class: "action-group" }, text, hasPayload ? this.payloadBlock(p) : null,
            el("div", { class: "alert-buttons" }, others.map(button))),
          cancel.length ? el("div", { class: "action-group cancel-group" }, cancel.map(button)) : null);
      }
      const row = buttons.length === 2 && cancel.length <= 1;
      const ordered = row ? [...cancel, ...others] : [...others, ...cancel]; // iOS: cancel left in a row, last in a column
      return el("div", { class: "alert", role: "alertdialog", "aria-label": p.title },
        text, hasPayload ? this.payloadBlock(p) : null,
        el("div", { class: row ? "alert-buttons row" : "alert-buttons column" }, ordered.map(button)));
    }

    dialogBox(p, readonly) {
      return el("div", { class: "dialog", role: "dialog", "aria-label": p.destination },
        el("div", { class: "card-head" },
          el("span", { class: "style-badge style-dialog", text: "dialog" }),
          el("strong", { class: "destination", text: p.destination }),
          this.lockMark(p), this.closeButton(p, readonly)),
        this.identity(p),
        this.payloadBlock(p));
    }

    progressBox(p, readonly) {
      const total = Number(p.total);
      const completed = Number(p.completed);
      const share = total > 0 ? Math.min(1, Math.max(0, completed / total)) : 0;
      const input = el("input", { type: "number", class: "progress-input", min: "0", max: String(p.total), step: "any",
        value: String(p.completed), disabled: readonly, "aria-label": "completed" });
      const form = el("form", { class: "progress-edit", novalidate: true },
        el("label", {}, "completed ", input),
        el("button", { type: "submit", class: "progress-apply", text: "Apply", disabled: readonly }));
      form.addEventListener("submit", (event) => {
        event.preventDefault();
        this.updateProgress(p, input.value);
      });
      return el("div", { class: "progress-dialog", role: "dialog", "aria-label": p.message || p.destination },
        el("div", { class: "card-head" },
          el("span", { class: "style-badge style-progress", text: "progress" }),
          el("strong", { class: "destination", text: p.destination }),
          this.lockMark(p), this.closeButton(p, readonly)),
        p.message !== undefined ? el("div", { class: "progress-message", text: p.message }) : null,
        el("progress", { class: "progress-bar", max: String(total), value: String(completed) }),
        el("div", { class: "progress-text", text: `${p.completed} of ${p.total} (${Math.round(share * 100)}%)` }),
        form,
        Object.keys(p.payload || {}).length ? this.payloadBlock(p) : null);
    }

    /** The queue: live, or `readonly` (an old version's, without its cancel buttons working). */
    renderQueue(queue, { readonly = false } = {}) {
      clear(this.queue);
      this.queue.dataset.readonly = readonly ? "true" : "false";
      $("#queue-count").textContent = queue.length ? `(${queue.length})` : "";
      if (!queue.length) {
        this.queue.append(el("li", { class: "empty", text: "Nothing waits." }));
        return;
      }
      queue.forEach((p, position) => {
        this.queue.append(el("li", { class: "queue-item", "data-presentation-id": p.id, "data-position": String(position),
          "data-style": p.style, "data-destination": p.destination, "data-locked": p.locked ? "true" : "false" },
        el("span", { class: "queue-position", text: `#${position}` }),
        el("strong", { class: "destination", text: p.destination }),
        el("span", { class: `style-badge style-${p.style}`, text: p.style }),
        p.key !== p.destination ? el("code", { class: "key", text: p.key }) : null,
        this.lockMark(p),
        el("button", { type: "button", class: "close queue-cancel", "aria-label": `Cancel ${p.destination}`, title: "Cancel (leave the queue)",
          text: "×", disabled: readonly, onclick: () => this.dismiss(p) })));
      });
    }

    // ---------------------------------------------------------------- acting as the app would

    /** A change; its answer's session is shown. A refusal goes to the problem area unless `quiet`. */
    async change(method, path, body, context, { quiet = false } = {}) {
      try {
        const result = await api(method, path, { body, signal: this.controller.signal });
        if (this.stopped) return null;
        if (!result.ok) {
          if (!quiet) problemArea.show(result.problem, context);
          return result;
        }
        problemArea.hide();
        if (result.json && result.json.session) this.apply(result.json.session);
        return result;
      } catch (error) {
        handleFailure(error, context);
        return null;
      }
    }

    dismiss(p) {
      return this.change("POST", `${this.base}/dismiss`, { presentation: p.id }, `Dismissing ${p.destination}`);
    }

    answer(p, button) {
      return this.change("POST", `${this.base}/dismiss`, { presentation: p.id, result: { buttonId: button.id } },
        `Answering ${p.destination} with ${button.id}`);
    }

    /** Pops from a level: the top entry, or `{to}` / `{all}`. */
    pop(level, options, context) {
      return this.change("POST", `${this.base}/path/pop`, { level, ...options }, context);
    }

    updateProgress(p, text) {
      const completed = Number(text);
      if (text.trim() === "" || !Number.isFinite(completed)) {
        problemArea.show({ title: "Not a number", detail: "completed must be a number from 0 to the total." }, `Updating ${p.destination}`);
        return null;
      }
      return this.change("PATCH", `${this.base}/presentations/${encodeURIComponent(p.id)}`, { completed }, `Updating ${p.destination}`);
    }

    // ---------------------------------------------------------------- the present form

    async loadDestinations() {
      try {
        const result = await api("GET", "/v1/destinations", { signal: this.controller.signal });
        if (this.stopped) return;
        if (!result.ok) {
          problemArea.show(result.problem, "Reading the destinations");
          return;
        }
        this.catalog = result.json;
        this.buildPresentForm();
        this.buildPushForm();
      } catch (error) {
        handleFailure(error, "Reading the destinations");
      }
    }

    buildPresentForm() {
      const catalog = this.catalog;
      const isCatalog = catalog.mode === "catalog" && Array.isArray(catalog.destinations) && catalog.destinations.length > 0;
      // `push` is not a modal style: a destination only pushed is not presented.
      const modalStyles = (d) => (Array.isArray(d.styles) ? d.styles : STYLES).filter((s) => s !== "push");
      const presentable = isCatalog ? catalog.destinations.filter((d) => modalStyles(d).length > 0) : [];
      const form = el("form", { id: "present-form", class: "present-form", novalidate: true, "data-mode": isCatalog ? "catalog" : "open" });
      let destination;
      if (isCatalog) {
        destination = el("select", { id: "present-destination", name: "destination", "data-pointer": "/destination" },
          presentable.map((d) => el("option", { value: d.name, text: d.name })));
      } else {
        destination = el("input", { id: "present-destination", name: "destination", "data-pointer": "/destination",
          placeholder: "settings", autocomplete: "off", spellcheck: "false" });
      }
      const summary = el("p", { id: "destination-summary", class: "muted summary" });
      const style = el("select", { id: "present-style", name: "style", "data-pointer": "/style" });
      const styleFields = el("div", { id: "style-fields", class: "style-fields" });
      const payloadFields = el("div", { id: "payload-fields", class: "payload-fields" });
      const asJSON = el("input", { id: "payload-as-json", type: "checkbox" });
      const payloadText = el("textarea", { id: "payload-json", class: "json", rows: "4", spellcheck: "false", "data-pointer": "/payload" });
      const key = el("input", { id: "present-key", name: "key", "data-pointer": "/key", placeholder: "defaults to the destination", autocomplete: "off" });
      const locked = el("input", { id: "present-locked", type: "checkbox", name: "locked", "data-pointer": "/locked" });
      const whenBlocked = el("select", { id: "present-when-blocked", "data-pointer": "/whenBlocked" },
        el("option", { value: "queue", text: "queue" }), el("option", { value: "reject", text: "reject" }));
      const status = el("p", { id: "present-status", class: "present-status", role: "status" });
      const errors = el("ul", { id: "present-errors", class: "field-errors", hidden: true });

      let payloadForm = null; // {read()} for the generated fields, or null: the JSON textarea
      let styleForm = null;
      const entryOf = () => (isCatalog ? presentable.find((d) => d.name === destination.value) : null);
      // Each rebuilds only what the destination changes, so that nothing typed is lost for nothing.
      const fillStyles = () => {
        const entry = entryOf();
        const allowed = entry ? modalStyles(entry) : STYLES;
        const previous = style.value;
        if ([...style.options].map((o) => o.value).join() === allowed.join()) return false;
        clear(style).append(...allowed.map((s) => el("option", { value: s, text: s })));
        if (allowed.includes(previous)) style.value = previous;
        return style.value !== previous;
      };
      let payloadEntry; // the catalog entry the payload fields were made for
      const fillPayload = (force) => {
        const entry = entryOf();
        if (!force && entry === payloadEntry) return;
        payloadEntry = entry;
        summary.textContent = entry?.summary || "";
        payloadText.placeholder = payloadPlaceholder(entry?.payload);
        clear(payloadFields);
        payloadForm = null;
        const schema = entry?.payload;
        if (schema && schema.properties && !asJSON.checked) {
          payloadForm = objectFields(schema, "/payload", true);
          payloadFields.append(payloadForm.node);
          payloadText.hidden = true;
        } else {
          payloadText.hidden = false;
        }
        asJSON.parentElement.hidden = !(schema && schema.properties);
      };
      const fillStyleFields = () => {
        clear(styleFields);
        styleForm = styleFieldsFor(style.value);
        if (styleForm) styleFields.append(styleForm.node);
      };
      destination.addEventListener("change", () => {
        if (fillStyles()) fillStyleFields();
        fillPayload(false);
      });
      style.addEventListener("change", fillStyleFields);
      asJSON.addEventListener("change", () => {
        if (asJSON.checked && payloadForm) {
          try {
            payloadText.value = prettyJSON(payloadForm.read().value ?? {});
          } catch {
            payloadText.value = "{}";
          }
        }
        fillPayload(true);
      });

      append(form, [
        el("label", { class: "field" }, el("span", { text: "Destination" }), destination),
        summary,
        el("label", { class: "field" }, el("span", { text: "Style" }), style),
        styleFields,
        el("fieldset", { class: "payload" }, el("legend", { text: "Payload" }),
          payloadFields,
          el("label", { class: "inline" }, asJSON, " edit as JSON"),
          payloadText),
        el("label", { class: "field" }, el("span", { text: "Key" }), key),
        el("div", { class: "field-row" },
          el("label", { class: "inline" }, locked, " locked"),
          el("label", { class: "inline" }, "when blocked ", whenBlocked)),
        el("div", { class: "actions" }, el("button", { id: "present-submit", type: "submit", text: "Present" })),
        status,
        errors,
      ]);

      form.addEventListener("submit", async (event) => {
        event.preventDefault();
        clearFieldErrors(form, errors);
        status.textContent = "";
        const local = [];
        const body = { destination: destination.value.trim() };
        body.style = style.value;
        if (styleForm) {
          try {
            Object.assign(body, styleForm.read());
          } catch (error) {
            local.push(...(error.fieldErrors || [{ pointer: "", detail: String(error.message) }]));
          }
        }
        try {
          const payload = payloadForm ? payloadForm.read().value : parsePayloadText(payloadText.value);
          if (payload !== undefined) body.payload = payload;
        } catch (error) {
          local.push(...(error.fieldErrors || [{ pointer: "/payload", detail: String(error.message) }]));
        }
        if (key.value !== "") body.key = key.value;
        if (locked.checked) body.locked = true;
        if (whenBlocked.value !== "queue") body.whenBlocked = whenBlocked.value;
        if (local.length) {
          showFieldErrors(form, errors, local);
          status.textContent = "Not sent: fix the fields marked.";
          return;
        }
        const submit = $("#present-submit", form);
        submit.disabled = true;
        const result = await this.change("POST", `${this.base}/presentations`, body, `Presenting ${body.destination || "(no destination)"}`);
        submit.disabled = false;
        if (!result) return;
        if (result.ok) {
          const outcome = { 201: "presented", 202: "queued", 200: "updated in place" }[result.status] || "done";
          const where = result.status === 202 && typeof result.json.position === "number" ? ` at position ${result.json.position}` : "";
          status.textContent = `${result.json.presentation?.destination ?? body.destination}: ${outcome}${where} (${result.status}), version ${result.json.session?.version ?? "?"}`;
          status.dataset.outcome = String(result.status);
        } else {
          status.dataset.outcome = String(result.status);
          status.textContent = `Refused: ${result.problem.title} (${result.status})`;
          if (Array.isArray(result.problem.errors)) showFieldErrors(form, errors, result.problem.errors);
        }
      });

      fillStyles();
      fillPayload(true);
      fillStyleFields();
      clear(this.presentSection).append(el("h2", {}, "Present ",
        el("span", { class: "muted", text: isCatalog ? "(catalog)" : "(open: any destination)" })), form);
    }


    // ---------------------------------------------------------------- the push form

    /**
     * Pushes onto a level: the root or a container on the stack. With a catalog the destinations
     * are those whose styles include `push`; in open mode any name goes. The payload is JSON.
     */
    buildPushForm() {
      const catalog = this.catalog;
      const isCatalog = catalog.mode === "catalog";
      const pushable = isCatalog ? (catalog.destinations || []).filter((d) => Array.isArray(d.styles) && d.styles.includes("push")) : [];
      const level = el("select", { id: "push-level", name: "level", "data-pointer": "/level",
        onchange: () => { this.pushLevel = level.value; } });
      let destination;
      if (isCatalog) {
        destination = el("select", { id: "push-destination", name: "destination", "data-pointer": "/destination" },
          pushable.map((d) => el("option", { value: d.name, text: d.name })));
      } else {
        destination = el("input", { id: "push-destination", name: "destination", "data-pointer": "/destination",
          placeholder: "privacy", autocomplete: "off", spellcheck: "false" });
      }
      const summary = el("p", { id: "push-summary", class: "muted summary" });
      const describe = () => {
        const entry = pushable.find((d) => d.name === destination.value);
        const schema = entry && entry.payload;
        const required = new Set((schema && schema.required) || []);
        const members = Object.entries((schema && schema.properties) || {})
          .map(([name, sub]) => `${name}${required.has(name) ? " (required)" : ""}: ${hint(sub) || "any"}`);
        summary.textContent = entry ? [entry.summary, members.length ? `payload: ${members.join("; ")}` : ""].filter(Boolean).join(" · ") : "";
        payload.placeholder = payloadPlaceholder(schema);
      };
      destination.addEventListener("change", describe);
      const payload = el("textarea", { id: "push-payload", class: "json", rows: "3", spellcheck: "false", "data-pointer": "/payload" });
      const key = el("input", { id: "push-key", name: "key", "data-pointer": "/key", placeholder: "defaults to the destination", autocomplete: "off" });
      const submit = el("button", { id: "push-submit", type: "submit", text: "Push", disabled: isCatalog && !pushable.length });
      const status = el("p", { id: "push-status", class: "present-status", role: "status" });
      const errors = el("ul", { id: "push-errors", class: "field-errors", hidden: true });
      const form = el("form", { id: "push-form", class: "present-form", novalidate: true, "data-mode": isCatalog ? "catalog" : "open" },
        el("label", { class: "field" }, el("span", { text: "Level" }), level),
        el("label", { class: "field" }, el("span", { text: "Destination" }), destination),
        isCatalog && !pushable.length ? el("p", { class: "muted", text: "No destination of the catalog allows push." }) : summary,
        el("label", { class: "field" }, el("span", { text: "Payload (JSON)" }), payload),
        el("label", { class: "field" }, el("span", { text: "Key" }), key),
        el("div", { class: "actions" }, submit),
        status,
        errors);
      form.addEventListener("submit", async (event) => {
        event.preventDefault();
        clearFieldErrors(form, errors);
        status.textContent = "";
        const body = { destination: destination.value.trim(), level: level.value || "root" };
        try {
          const value = parsePayloadText(payload.value);
          if (value !== undefined) body.payload = value;
        } catch (error) {
          showFieldErrors(form, errors, error.fieldErrors);
          status.textContent = "Not sent: fix the fields marked.";
          return;
        }
        if (key.value !== "") body.key = key.value;
        submit.disabled = true;
        const result = await this.change("POST", `${this.base}/path`, body, `Pushing ${body.destination || "(no destination)"} onto ${this.levelName(body.level)}`);
        submit.disabled = false;
        if (!result) return;
        status.dataset.outcome = String(result.status);
        if (result.ok) {
          const outcome = result.status === 201 ? "pushed" : "updated in place";
          status.textContent = `${result.json.entry?.destination ?? body.destination}: ${outcome} onto ${this.levelName(result.json.level ?? body.level)} (${result.status}), version ${result.json.session?.version ?? "?"}`;
        } else {
          status.textContent = `Refused: ${result.problem.title} (${result.status})`;
          if (Array.isArray(result.problem.errors)) showFieldErrors(form, errors, result.problem.errors);
        }
      });
      describe();
      clear(this.pushSection).append(el("h2", {}, "Push ",
        el("span", { class: "muted", text: isCatalog ? "(catalog destinations allowing push)" : "(open: any destination)" })), form);
      this.renderLevels();
    }

    /**
     * The push form's levels: the root and each container on the stack. The choice made stays while
     * its level is there; otherwise the server's default: the top-most container, else the root.
     */
    renderLevels() {
      const select = $("#push-level");
      if (!select) return;
      const containers = (this.live ? this.live.stack : []).filter(isContainer);
      const options = [["root", "root (the app)"], ...containers.map((p) => [p.id, `${p.destination} (${p.style}) · ${shortId(p.id)}`])];
      const fallback = containers.length ? containers[containers.length - 1].id : "root";
      const wanted = this.pushLevel && options.some(([value]) => value === this.pushLevel) ? this.pushLevel : fallback;
      if ([...select.options].map((o) => `${o.value}=${o.textContent}`).join("\n") !== options.map(([v, t]) => `${v}=${t}`).join("\n")) {
        clear(select).append(...options.map(([value, text]) => el("option", { value, text })));
      }
      select.value = wanted;
    }

    // ---------------------------------------------------------------- the link box

    /** Try a URL: what the catalog's routes would do with it (resolve), then Open applies it. */
    buildLinkBox() {
      const url = el("input", { id: "link-url", type: "text", name: "url", autocomplete: "off", spellcheck: "false",
        placeholder: "myapp://onboarding/downloads/42", "aria-label": "URL",
        oninput: () => { this.resolved = null; outcome.hidden = true; problem.hidden = true; status.textContent = ""; } });
      const routeURL = el("code", { id: "link-route-url" });
      const routeName = el("span", { id: "link-route-name", class: "muted" });
      const action = el("code", { id: "link-action" });
      const clearsFirst = el("span", { id: "link-clear" });
      const request = el("pre", { id: "link-request", class: "payload" });
      const open = el("button", { id: "link-open", type: "button", text: "Open", onclick: () => this.openLink() });
      const outcome = el("div", { id: "link-outcome", class: "link-outcome", hidden: true },
        el("dl", { class: "link-facts" },
          el("dt", { text: "route" }), el("dd", {}, routeURL, " ", routeName),
          el("dt", { text: "action" }), el("dd", {}, action, " ", clearsFirst)),
        el("div", { class: "muted", text: "would apply" }),
        request,
        el("div", { class: "actions" }, open));
      const status = el("p", { id: "link-status", class: "present-status", role: "status" });
      const problem = el("div", { id: "link-problem", class: "link-problem", role: "alert", hidden: true });
      const form = el("form", { id: "link-form", class: "link-form", novalidate: true },
        url, el("button", { id: "link-resolve", type: "submit", text: "Resolve" }));
      form.addEventListener("submit", (event) => {
        event.preventDefault();
        this.resolveLink();
      });
      this.link = { url, routeURL, routeName, action, clearsFirst, request, open, outcome, status, problem };
      return el("section", { id: "link-section", class: "panel" },
        el("h2", {}, "Open a URL ", el("span", { class: "muted", text: "(the catalog's routes)" })),
        form, outcome, status, problem);
    }

    showLinkProblem(problem) {
      const box = this.link.problem;
      clear(box);
      box.hidden = false;
      box.dataset.type = problem.type || "";
      box.dataset.status = String(problem.status ?? "");
      append(box, [
        el("strong", { class: "problem-title", text: problem.title || "Refused" }), " ",
        problem.status ? el("span", { class: "problem-status", text: String(problem.status) }) : null,
        problem.detail ? el("p", { class: "problem-detail", text: problem.detail }) : null,
        Array.isArray(problem.errors) && problem.errors.length
          ? el("ul", { class: "problem-errors" }, problem.errors.map((e) => el("li", {}, el("code", { text: e.pointer || "(body)" }), " ", String(e.detail ?? ""))))
          : null,
      ]);
    }

    async resolveLink() {
      const link = this.link;
      const url = link.url.value.trim();
      this.resolved = null;
      link.outcome.hidden = true;
      link.problem.hidden = true;
      link.status.textContent = "";
      if (!url) return;
      try {
        const result = await api("GET", `/v1/links/resolve?url=${encodeURIComponent(url)}`, { signal: this.controller.signal });
        if (this.stopped || link.url.value.trim() !== url) return;
        if (!result.ok) {
          this.showLinkProblem(result.problem);
          return;
        }
        const { route = {}, action: what, clear: clears, request } = result.json;
        link.routeURL.textContent = route.url ?? "";
        link.routeName.textContent = route.name ? `(${route.name})` : "";
        link.action.textContent = String(what ?? "");
        link.clearsFirst.textContent = clears ? "after clearing everything" : "";
        link.request.textContent = prettyJSON(request ?? null);
        link.outcome.hidden = false;
        link.open.disabled = false;
        this.resolved = url;
      } catch (error) {
        handleFailure(error, "Resolving a URL");
      }
    }

    async openLink() {
      const link = this.link;
      if (!this.resolved) return;
      link.open.disabled = true;
      link.problem.hidden = true;
      const result = await this.change("POST", `${this.base}/links`, { url: this.resolved }, "Opening a URL", { quiet: true });
      link.open.disabled = false;
      if (!result) return;
      link.status.dataset.outcome = String(result.status);
      if (result.ok) {
        const route = result.json.route || {};
        link.status.textContent = `Opened with ${route.name || route.url || "a route"}: ${result.json.action}, version ${result.json.session?.version ?? "?"}`;
      } else {
        link.status.textContent = "";
        this.showLinkProblem(result.problem);
      }
    }

    // ---------------------------------------------------------------- the timeline

    /**
     * Reads the whole event log, following `next`, into a fresh map; changes the stream brought
     * meanwhile are kept. Called when the stream starts or resets.
     */
    async loadLog() {
      if (this.loadingLog) { this.reloadLog = true; return; }
      this.loadingLog = true;
      try {
        do {
          this.reloadLog = false;
          const log = new Map();
          const changeAt = (version, at) => {
            if (!log.has(version)) log.set(version, { version, at, events: [], stack: null, path: null, paths: null });
            return log.get(version);
          };
          let path = `${this.base}/events?after=0&limit=${EVENTS_PAGE}`;
          for (let page = 0; path && page < EVENTS_MAX_PAGES; page += 1) {
            const result = await api("GET", path, { signal: this.controller.signal });
            if (this.stopped) return;
            if (!result.ok) {
              if (result.status !== 404) problemArea.show(result.problem, "Reading the event log");
              break;
            }
            for (const { version, at, ...event } of result.json.events || []) {
              changeAt(version, at).events.push(event);
              this.rememberEvent(event);
            }
            for (const { version, at, stack, path: root, paths } of result.json.changes || []) {
              Object.assign(changeAt(version, at), { stack: stack ?? null, path: root ?? null, paths: paths ?? null });
            }
            const next = result.json.next;
            path = typeof next === "string" && next.startsWith("/v1/sessions/") ? next : null;
          }
          for (const [version, change] of this.log) {
            if (change.fromStream) log.set(version, change);
          }
          this.log = log;
          this.base0 = null;
        } while (this.reloadLog && !this.stopped);
      } catch (error) {
        handleFailure(error, "Reading the event log");
      } finally {
        this.loadingLog = false;
      }
      await this.computeStates();
      this.renderTimeline();
    }

    /** A change from the stream, into the log. */
    takeChange(change) {
      if (!change || typeof change.version !== "number") return;
      for (const event of change.events || []) this.rememberEvent(event);
      this.log.set(change.version, { version: change.version, at: change.at, events: change.events || [],
        stack: change.stack ?? null, path: change.path ?? null, paths: change.paths ?? null, fromStream: true });
      this.computeStates().then(() => this.renderTimeline());
    }

    /**
     * The session after each logged change, by `replay` from the one before (a change that created
     * the session starts from nothing), for the timeline's plans. When the log was pruned, the first
     * kept version's state is the server's (`GET …/versions/{n}`), and what came before it is unknown.
     */
    async computeStates() {
      const versions = [...this.log.keys()].sort((a, b) => a - b);
      if (!versions.length) return;
      const first = this.log.get(versions[0]);
      const creates = (change) => change.events.some((e) => e.type === "sessionCreated");
      if (!creates(first) && (!this.base0 || this.base0.version !== first.version) && !first.baseAsked) {
        first.baseAsked = true;
        const session = await this.sessionAt(first.version).catch(() => null);
        if (session) this.base0 = { version: first.version, session };
      }
      const states = new Map();
      const exact = new Set(); // versions replayed from the session's creation: a failure there is the log's
      for (const version of versions) {
        const change = this.log.get(version);
        change.before = creates(change) ? emptySession(this.id) : states.get(version - 1) || null;
        change.replayError = null;
        if (change.before) {
          try {
            states.set(version, replay(change.before, change));
            if (creates(change) || exact.has(version - 1)) exact.add(version);
          } catch (error) {
            if (creates(change) || exact.has(version - 1)) change.replayError = error.message;
            else change.before = null; // rebuilt from a plan, not from the log: unknown from here
          }
        } else if (this.base0 && this.base0.version === version) {
          states.set(version, this.base0.session);
        }
      }
      this.states = states;
    }

    renderTimeline() {
      const versions = [...this.log.keys()].sort((a, b) => b - a);
      clear(this.timeline);
      if (!versions.length) {
        this.timeline.append(el("li", { class: "empty", text: "No logged changes." }));
      }
      for (const version of versions.slice(0, this.timelineShown)) {
        const change = this.log.get(version);
        const after = this.states.get(version);
        const plan = change.before && after ? navigationPlan(navigationIds(change.before), navigationIds(after)) : null;
        const item = el("li", { class: "timeline-entry", "data-version": String(version) },
          el("button", { type: "button", class: "timeline-button", title: `Show the navigation at version ${version}`,
            onclick: () => this.showVersion(version) },
          el("span", { class: "tl-version", text: `v${version}` }),
          timeElement(change.at, "tl-time")),
          el("ul", { class: "tl-events" }, change.events.map((e) =>
            el("li", { class: `tl-event event-${e.type}`, "data-type": e.type }, describeEvent(e, (level) => this.levelName(level))))),
          el("div", { class: "tl-transition" },
            change.replayError ? el("span", { class: "replay-error", text: `cannot replay: ${change.replayError}` })
              : plan === null ? el("span", { class: "muted", text: "transition: (the log starts here)" })
                : plan.length === 0 ? el("span", { class: "muted", text: "transition: none" })
                  : plan.map((s) => this.stepBadge(s))));
        if (change.replayError) item.dataset.replayError = change.replayError;
        if (this.history && this.history.version === version) item.classList.add("selected");
        this.timeline.append(item);
      }
      this.timelineMore.hidden = versions.length <= this.timelineShown;
    }

    /** One step of a plan: ↓ dismiss, ↑ present, ← pop, → push. */
    stepBadge(s) {
      if (s.dismiss || s.present) {
        const id = s.dismiss || s.present;
        const p = this.presentations.get(id);
        return el("span", { class: s.dismiss ? "step step-dismiss" : "step step-present", "data-step": s.dismiss ? "dismiss" : "present",
          "data-presentation-id": id, title: id }, s.dismiss ? "↓ " : "↑ ", p ? p.destination : shortId(id));
      }
      const id = s.pop || s.push;
      const entry = this.entries.get(id);
      return el("span", { class: s.pop ? "step step-pop" : "step step-push", "data-step": s.pop ? "pop" : "push",
        "data-entry-id": id, "data-level": s.level, title: `${id} in ${s.level}` },
      s.pop ? "← " : "→ ", entry ? entry.destination : shortId(id), el("span", { class: "step-level", text: ` in ${this.levelName(s.level)}` }));
    }

    /**
     * The whole session at `version` (stack, queue, paths), as the server rebuilds it from its log:
     * `GET …/versions/{n}`, kept once read, since a version never changes. Throws with the problem
     * when the server refuses (`410` once the log no longer holds that version).
     */
    async sessionAt(version) {
      if (this.versions.has(version)) return this.versions.get(version);
      const result = await api("GET", `${this.base}/versions/${version}`, { signal: this.controller.signal });
      if (!result.ok) {
        const error = new Error(result.problem.title);
        error.problem = result.problem;
        throw error;
      }
      this.versions.set(version, result.json);
      return result.json;
    }

    /** The whole session at an old `version`, from the server, read-only; a refusal goes to the problem area. */
    async showVersion(version) {
      this.asked = version;
      try {
        const session = await this.sessionAt(version);
        if (this.stopped || this.asked !== version) return; // another version was clicked meanwhile
        this.asked = null;
        if ($("#problem").dataset.context?.startsWith("Showing version")) problemArea.hide(); // a 410 of another click
        this.history = { version, session };
        clear(this.banner).append(
          el("span", { id: "history-label", text: `At version ${version}` }),
          el("span", { class: "muted", text: " — read-only: the session as it was (navigation and queue); the controls are live only." }),
          el("button", { id: "back-to-live", type: "button", text: "Back to live", onclick: () => this.backToLive() }));
        this.banner.hidden = false;
        this.banner.dataset.version = String(version);
        $("#session-view").dataset.showing = String(version);
        this.renderNavigation(session, { readonly: true });
        this.renderQueue(session.queue || [], { readonly: true });
        this.renderTimeline();
      } catch (error) {
        if (this.asked === version) this.asked = null;
        if (error.problem) {
          const gone = error.problem.status === 410;
          problemArea.show(gone
            ? { ...error.problem, title: `Version ${version} is no longer in the event log`, detail: `${error.problem.detail || ""} The server keeps only the newest changes; the session at that version cannot be shown.`.trim() }
            : error.problem, `Showing version ${version}`);
        } else {
          handleFailure(error, `Showing version ${version}`);
        }
      }
    }

    backToLive() {
      this.history = null;
      this.banner.hidden = true;
      delete this.banner.dataset.version;
      delete $("#session-view").dataset.showing;
      const live = this.live || emptySession(this.id);
      this.renderNavigation(live, { readonly: false });
      this.renderQueue(live.queue);
      this.renderTimeline();
    }
  }

  /** A logged event in words; `levelName` names a level (`root` or a container's id). */
  function describeEvent(e, levelName) {
    const p = e.presentation;
    const what = p ? `${p.destination} (${p.style})` : shortId(e.presentationId);
    const screen = e.entry ? e.entry.destination : shortId(e.entryId);
    const given = (value) => (value !== null && value !== undefined ? ` → ${JSON.stringify(value)}` : "");
    switch (e.type) {
      case "sessionCreated": return typeof e.ttl === "number" ? `session created (ttl ${e.ttl} s)` : "session created";
      case "presented": return `presented ${what}`;
      case "queued": return `queued ${what} at ${e.position}`;
      case "promoted": return `promoted ${what}`;
      case "updated": return `updated ${what}`;
      case "dismissed": return `${p && p.presentedAt === null ? "cancelled" : "dismissed"} ${what}${given(p && p.result)}`;
      case "replaced": return `replaced the stack (${(e.stack || []).length})`;
      case "pushed": return `pushed ${screen} onto ${levelName(e.level)}`;
      case "popped": return `popped ${screen} from ${levelName(e.level)}${given(e.result)}`;
      case "entryUpdated": return `updated ${screen} in ${levelName(e.level)}`;
      case "navigated": return e.url ? `opened ${e.url}${e.route ? ` (route ${e.route})` : ""}` : "navigated (the whole navigation in one change)";
      default: return String(e.type);
    }
  }

  // ------------------------------------------------------------------ generated fields

  function fieldError(pointer, detail) {
    const error = new Error(detail);
    error.fieldErrors = [{ pointer, detail }];
    return error;
  }

  /**
   * The placeholder of a payload's JSON box: an example built from the destination's schema (each
   * property with a value of its type), else `{}`, only the shape every payload has.
   */
  function payloadPlaceholder(schema) {
    return schema && schema.properties ? JSON.stringify(exampleValue(schema)) : "{}";
  }

  /** A value a schema accepts, as far as its type, enum and bounds tell. */
  function exampleValue(schema) {
    if (Array.isArray(schema.enum) && schema.enum.length) return schema.enum[0];
    const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
    const bounded = () => schema.minimum ?? (schema.maximum !== undefined && schema.maximum < 0 ? schema.maximum : 0);
    switch (type) {
      case "object":
        return Object.fromEntries(Object.entries(schema.properties || {}).map(([name, sub]) => [name, exampleValue(sub || {})]));
      case "array": return [];
      case "string": return "…";
      case "integer": return Math.ceil(bounded());
      case "number": return bounded();
      case "boolean": return false;
      default: return null;
    }
  }

  function parsePayloadText(text) {
    if (text.trim() === "") return undefined;
    let value;
    try {
      value = JSON.parse(text);
    } catch (error) {
      throw fieldError("/payload", `not JSON: ${error.message}`);
    }
    if (value === null || typeof value !== "object" || Array.isArray(value)) throw fieldError("/payload", "must be a JSON object");
    return value;
  }

  function typesOf(schema) {
    if (!schema || schema.type === undefined) return [];
    return Array.isArray(schema.type) ? schema.type : [schema.type];
  }

  function hint(schema) {
    const parts = [];
    const types = typesOf(schema);
    if (types.length) parts.push(types.join(" | "));
    if (schema.minimum !== undefined || schema.maximum !== undefined) parts.push(`${schema.minimum ?? "…"}–${schema.maximum ?? "…"}`);
    if (schema.minLength !== undefined || schema.maxLength !== undefined) parts.push(`${schema.minLength ?? 0}–${schema.maxLength ?? "…"} characters`);
    if (schema.maxItems !== undefined) parts.push(`at most ${schema.maxItems} items`);
    return parts.join(", ");
  }

  /**
   * The inputs for an object schema's properties (recursively), plus a JSON box for other members
   * unless additionalProperties is false. read() → {value} or {} when nothing was filled in.
   */
  function objectFields(schema, pointer, top) {
    const required = new Set(schema.required || []);
    const fields = Object.entries(schema.properties || {}).map(([name, sub]) => ({ name, field: valueField(sub, `${pointer}/${escapePointer(name)}`, name, required.has(name)) }));
    let extra = null;
    if (schema.additionalProperties !== false) {
      extra = el("textarea", { class: "json extra-members", rows: "2", spellcheck: "false", "data-pointer": pointer, placeholder: "other members, as a JSON object" });
    }
    const node = el(top ? "div" : "fieldset", { class: "object-fields", "data-pointer": pointer },
      top ? null : el("legend", { text: pointer.split("/").pop() }),
      fields.map((f) => f.field.node),
      extra ? el("label", { class: "field" }, el("span", { text: "other members" }), extra) : null);
    return {
      node,
      read() {
        const value = {};
        const errors = [];
        let any = false;
        for (const { name, field } of fields) {
          try {
            const read = field.read();
            if ("value" in read) { value[name] = read.value; any = true; }
          } catch (error) {
            errors.push(...(error.fieldErrors || [{ pointer: `${pointer}/${name}`, detail: error.message }]));
          }
        }
        if (extra && extra.value.trim() !== "") {
          try {
            const more = JSON.parse(extra.value);
            if (more === null || typeof more !== "object" || Array.isArray(more)) throw new Error("must be a JSON object");
            for (const [name, member] of Object.entries(more)) { value[name] = member; any = true; }
          } catch (error) {
            errors.push({ pointer, detail: `other members: ${error.message}` });
          }
        }
        if (errors.length) {
          const error = new Error("invalid fields");
          error.fieldErrors = errors;
          throw error;
        }
        return any || top ? { value } : {};
      },
    };
  }

  function escapePointer(name) {
    return name.replace(/~/g, "~0").replace(/\//g, "~1");
  }

  /** One input for a value schema; read() → {value} or {} when left empty. */
  function valueField(schema, pointer, name, required) {
    const types = typesOf(schema).filter((t) => t !== "null");
    const label = el("span", { class: "field-name" }, name, required ? el("abbr", { title: "required", text: " *" }) : null);
    const help = [schema.description, hint(schema)].filter(Boolean).join(" · ");
    const wrap = (input) => el("label", { class: "field", "data-field": name }, label, input, help ? el("small", { class: "muted", text: help }) : null);
    if (Array.isArray(schema.enum)) {
      const select = el("select", { "data-pointer": pointer, name },
        el("option", { value: "", text: "(not set)" }),
        schema.enum.map((v, i) => el("option", { value: String(i), text: JSON.stringify(v) })));
      return { node: wrap(select), read: () => (select.value === "" ? {} : { value: schema.enum[Number(select.value)] }) };
    }
    if (types.length === 1 && types[0] === "object" && schema.properties) {
      const inner = objectFields(schema, pointer, false);
      return { node: inner.node, read: () => inner.read() };
    }
    if (types.length === 1 && types[0] === "string") {
      const input = el("input", { type: "text", "data-pointer": pointer, name, autocomplete: "off" });
      return { node: wrap(input), read: () => (input.value === "" ? {} : { value: input.value }) };
    }
    if (types.length === 1 && (types[0] === "number" || types[0] === "integer")) {
      const input = el("input", { type: "text", inputmode: "decimal", "data-pointer": pointer, name, autocomplete: "off", class: "number" });
      return {
        node: wrap(input),
        read() {
          const text = input.value.trim();
          if (text === "") return {};
          const value = Number(text);
          if (!Number.isFinite(value) || !/^-?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(text)) throw fieldError(pointer, "not a number");
          return { value };
        },
      };
    }
    if (types.length === 1 && types[0] === "boolean") {
      const select = el("select", { "data-pointer": pointer, name },
        el("option", { value: "", text: "(not set)" }), el("option", { value: "true", text: "true" }), el("option", { value: "false", text: "false" }));
      return { node: wrap(select), read: () => (select.value === "" ? {} : { value: select.value === "true" }) };
    }
    // Arrays, several types, no type: JSON.
    const input = el("textarea", { class: "json", rows: "2", spellcheck: "false", "data-pointer": pointer, name, placeholder: "JSON" });
    return {
      node: wrap(input),
      read() {
        if (input.value.trim() === "") return {};
        try {
          return { value: JSON.parse(input.value) };
        } catch (error) {
          throw fieldError(pointer, `not JSON: ${error.message}`);
        }
      },
    };
  }

  /** The fields of a style: detents, alert texts and buttons, progress numbers. */
  function styleFieldsFor(style) {
    if (style === "sheet") {
      const detents = el("input", { id: "present-detents", "data-pointer": "/detents", placeholder: "medium, large, fraction:0.3, height:320", autocomplete: "off" });
      const noSwipe = el("input", { id: "present-interactive-dismiss-disabled", type: "checkbox", "data-pointer": "/interactiveDismissDisabled" });
      return {
        node: el("div", {},
          el("label", { class: "field" }, el("span", { text: "Detents" }), detents),
          el("label", { class: "inline" }, noSwipe, " interactiveDismissDisabled")),
        read() {
          const body = {};
          const list = detents.value.split(/[\s,]+/).filter(Boolean);
          if (list.length) body.detents = list;
          if (noSwipe.checked) body.interactiveDismissDisabled = true;
          return body;
        },
      };
    }
    if (style === "alert" || style === "confirmationDialog") {
      const title = el("input", { id: "present-title", "data-pointer": "/title", autocomplete: "off" });
      const message = el("textarea", { id: "present-message", rows: "2", "data-pointer": "/message" });
      const rows = el("div", { id: "present-buttons", class: "button-rows", "data-pointer": "/buttons" });
      const addRow = (id, label, role) => {
        const index = () => [...rows.children].indexOf(row);
        const idInput = el("input", { class: "button-id", placeholder: "id", value: id, autocomplete: "off", "aria-label": "button id" });
        const labelInput = el("input", { class: "button-label", placeholder: "label", value: label, autocomplete: "off", "aria-label": "button label" });
        const roleSelect = el("select", { class: "button-role", "aria-label": "button role" },
          ["default", "cancel", "destructive"].map((r) => el("option", { value: r, text: r, selected: r === role })));
        const row = el("div", { class: "button-row" }, idInput, labelInput, roleSelect,
          el("button", { type: "button", class: "button-remove", "aria-label": "Remove the button", text: "−", onclick: () => row.remove() }));
        row.pointerIndex = index;
        rows.append(row);
      };
      if (style === "alert") addRow("ok", "OK", "default");
      else { addRow("first", "First", "default"); addRow("cancel", "Cancel", "cancel"); }
      return {
        node: el("div", {},
          el("label", { class: "field" }, el("span", { text: "Title" }), title),
          el("label", { class: "field" }, el("span", { text: "Message" }), message),
          el("div", { class: "field" }, el("span", { text: "Buttons" }), rows,
            el("button", { id: "add-button", type: "button", text: "Add a button", onclick: () => addRow("", "", "default") }))),
        read() {
          const body = {};
          if (title.value !== "") body.title = title.value;
          if (message.value !== "") body.message = message.value;
          const buttons = [...rows.children].map((row) => ({
            id: $(".button-id", row).value, label: $(".button-label", row).value, role: $(".button-role", row).value,
          }));
          [...rows.children].forEach((row, i) => {
            $(".button-id", row).dataset.pointer = `/buttons/${i}/id`;
            $(".button-label", row).dataset.pointer = `/buttons/${i}/label`;
            $(".button-role", row).dataset.pointer = `/buttons/${i}/role`;
          });
          if (buttons.length || style === "confirmationDialog") body.buttons = buttons;
          return body;
        },
      };
    }
    if (style === "progress") {
      const total = el("input", { id: "present-total", class: "number", inputmode: "decimal", "data-pointer": "/total", value: "10" });
      const completed = el("input", { id: "present-completed", class: "number", inputmode: "decimal", "data-pointer": "/completed", value: "0" });
      const message = el("textarea", { id: "present-message", rows: "2", "data-pointer": "/message" });
      const number = (input, pointer) => {
        const text = input.value.trim();
        if (text === "") return undefined;
        const value = Number(text);
        if (!Number.isFinite(value)) throw fieldError(pointer, "not a number");
        return value;
      };
      return {
        node: el("div", {},
          el("div", { class: "field-row" },
            el("label", { class: "field" }, el("span", { text: "Total" }), total),
            el("label", { class: "field" }, el("span", { text: "Completed" }), completed)),
          el("label", { class: "field" }, el("span", { text: "Message" }), message)),
        read() {
          const body = {};
          const t = number(total, "/total");
          const c = number(completed, "/completed");
          if (t !== undefined) body.total = t;
          if (c !== undefined) body.completed = c;
          if (message.value !== "") body.message = message.value;
          return body;
        },
      };
    }
    return null;
  }

  function clearFieldErrors(form, list) {
    for (const node of form.querySelectorAll(".field-error")) node.remove();
    for (const node of form.querySelectorAll(".invalid")) node.classList.remove("invalid");
    clear(list);
    list.hidden = true;
  }

  /** Every error in the list, and each next to the input whose pointer is its longest prefix. */
  function showFieldErrors(form, list, errors) {
    const inputs = [...form.querySelectorAll("[data-pointer]")];
    list.hidden = false;
    for (const error of errors) {
      const pointer = String(error.pointer ?? "");
      list.append(el("li", { class: "field-error-item", "data-pointer": pointer }, el("code", { text: pointer || "(body)" }), " ", String(error.detail ?? "")));
      let best = null;
      for (const input of inputs) {
        const p = input.dataset.pointer;
        if ((pointer === p || pointer.startsWith(`${p}/`)) && (!best || p.length > best.dataset.pointer.length)) best = input;
      }
      if (best) {
        best.classList.add("invalid");
        const holder = best.closest(".field, .button-row") || best.parentElement;
        holder.append(el("small", { class: "field-error", "data-pointer": pointer, text: `${pointer}: ${error.detail ?? ""}` }));
      }
    }
  }

  boot();
})();
