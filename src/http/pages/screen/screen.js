// The venue screen: the tournament's public live state, polled every second with its ETag
// (an unchanged state costs a 304), and its clock counted here from the last state it has.
// `projected` moves a running clock on past every segment that ran out, each next segment
// starting exactly where the previous one ended and the last one running on, as the server's
// own auto-advance does (`Clock::catch_up` in actors/src/rules/clock.rs); a paused clock stays
// put. Every render goes through it, so the screen never waits for the server to change a
// level, and through a lost connection it keeps counting: levels and breaks change on time,
// with their blinds, "next" and time to the break, and the chime rings as each begins. After
// 10 s without an answer a quiet "нет связи" says the clock is the screen's own reckoning;
// the next answer replaces it with the server's state, which always wins (a pause or a level
// press made meanwhile shows then). A read stalled on a dead connection is given up after
// 10 s, and the server's time is taken from quick answers only, so that one held up on the way
// does not put the clock out. The room's events come as Server-Sent Events: `level`
// rings the chime (once per segment start, whichever of the event and the screen's own
// advance comes first), an `announcement` shows at once; the latest announcement is also
// asked for every 3 s.
(() => {
  'use strict';

  const POLL_MS = 1000;
  const READ_TIMEOUT_MS = 10000;
  const SURE_ROUND_TRIP_MS = 1000;
  const STALE_AFTER_MS = 10000;
  const CARD_EVERY_MS = 60000;
  const RENDER_MS = 250;
  const ANNOUNCEMENT_EVERY_MS = 3000;
  const ANNOUNCEMENT_SHOWN_MS = 5 * 60000;
  const RELISTEN_MS = 10000;

  const tournamentId = decodeURIComponent(location.pathname.split('/').filter(Boolean)[1] || '');
  const api = `/api/v1/tournaments/${encodeURIComponent(tournamentId)}`;
  const $ = (id) => document.getElementById(id);
  const screen = $('screen');

  let live = null;
  let card = null;
  let etag = null;
  let offsetMs = 0;
  /** The round trip of the answer offsetMs was taken from: the server's time is somewhere in it. */
  let offsetRoundTrip = Infinity;
  let lastNews = 0;
  let soundOn = false;
  let heardLevel = 0;
  /** Segment starts the chime rang for, as `idx@startedAt` (ms). */
  const rung = new Set();
  let shownAnnouncement = null;
  let announcementUntil = 0;

  const number = (n) => Number(n).toLocaleString('ru-RU');
  const two = (n) => String(n).padStart(2, '0');

  function duration(ms) {
    const seconds = Math.max(0, Math.ceil(ms / 1000));
    const h = Math.floor(seconds / 3600);
    const m = Math.floor((seconds % 3600) / 60);
    const s = seconds % 60;
    return h > 0 ? `${h}:${two(m)}:${two(s)}` : `${two(m)}:${two(s)}`;
  }

  function text(id, value) {
    const node = $(id);
    if (node.textContent !== value) node.textContent = value;
  }

  function show(section) {
    for (const id of ['live', 'before', 'after', 'missing']) $(id).hidden = id !== section;
  }

  function blindsOf(segment) {
    return `${number(segment.smallBlind)} / ${number(segment.bigBlind)}`;
  }

  /** "Уровень N" counts levels only; breaks have their own name. */
  function segmentName(levels, idx) {
    const segment = levels[idx];
    if (!segment) return '';
    if (segment.kind === 'break') return 'Перерыв';
    const n = levels.slice(0, idx + 1).filter((s) => s.kind === 'level').length;
    return `Уровень ${n}`;
  }

  function serverNow() {
    return Date.now() + offsetMs;
  }

  /**
   * The clock at `now` as the server's auto-advance has it (`Clock::catch_up`): while it runs,
   * a segment that ran out hands over to the next at its exact end (`levelStartedAt` plus its
   * duration, not the moment this runs), chained, up to the last segment, which runs on.
   * `{idx, levelStartedAt}`, the start in ms; null before the start.
   */
  function projected(clock, now) {
    let idx = clock.currentLevelIdx;
    let levelStartedAt = clock.levelStartedAt ? Date.parse(clock.levelStartedAt) : null;
    if (levelStartedAt === null || clock.pausedAt) return { idx, levelStartedAt };
    while (idx + 1 < clock.levels.length) {
      const end = levelStartedAt + clock.levels[idx].durationMin * 60000;
      if (end > now) break;
      idx += 1;
      levelStartedAt = end;
    }
    return { idx, levelStartedAt };
  }

  /** Milliseconds left at `now` in the segment `at` (frozen at the pause while paused). */
  function leftInSegment(clock, at, now) {
    const segment = clock.levels[at.idx];
    if (!segment || at.levelStartedAt === null) return 0;
    const asOf = clock.pausedAt ? Date.parse(clock.pausedAt) : now;
    return at.levelStartedAt + segment.durationMin * 60000 - asOf;
  }

  /**
   * The chime for a segment that began, once: the server's `level` event and the screen's own
   * advance name the same start alike (an advance starts at the previous end, to the ms), so
   * whichever comes second, or the event heard late after a lost connection, stays silent.
   */
  function ring(idx, startedAt) {
    const key = `${idx}@${startedAt}`;
    if (rung.has(key)) return;
    rung.add(key);
    screen.dataset.levelRings = String(rung.size);
    chime();
  }

  function renderLive() {
    const clock = live.clock;
    const levels = clock.levels;
    const now = serverNow();
    const at = projected(clock, now);
    const idx = at.idx;
    if (idx !== clock.currentLevelIdx) ring(idx, at.levelStartedAt);
    const segment = levels[idx] || {};
    const isBreak = segment.kind === 'break';
    const paused = Boolean(clock.pausedAt);
    const left = leftInSegment(clock, at, now);
    screen.dataset.break = String(isBreak);
    screen.dataset.paused = String(paused);
    text('segment', segmentName(levels, idx) + (paused ? ' · пауза' : ''));
    text('timer', duration(left));
    text('blinds', isBreak ? 'Перерыв' : blindsOf(segment));
    text('ante', !isBreak && segment.ante ? `Анте ${number(segment.ante)}` : '');
    text('note', segment.note || '');

    const next = levels[idx + 1];
    text('next', !next ? '—' : next.kind === 'break' ? `Перерыв ${next.durationMin} мин` : blindsOf(next));
    let toBreak = null;
    if (!isBreak) {
      let ms = left;
      for (const later of levels.slice(idx + 1)) {
        if (later.kind === 'break') { toBreak = ms; break; }
        ms += later.durationMin * 60000;
      }
    }
    text('to-break', toBreak === null ? '—' : duration(toBreak));
    text('players', `${live.remaining} / ${live.entrants}`);
    text('avg', number(live.avgStack));
    text('chips', number(live.chipsInPlay));

    const outs = live.eliminations.slice(0, 8).map((e) => `${e.place}|${e.name}`).join('\n');
    const list = $('eliminations');
    if (list.dataset.shown !== outs) {
      list.dataset.shown = outs;
      list.replaceChildren(...live.eliminations.slice(0, 8).map((e) => item(e.place, e.name)));
    }
    renderTables();
  }

  function item(place, name) {
    const li = document.createElement('li');
    const p = document.createElement('span');
    p.className = 'place';
    p.textContent = `${place}.`;
    const n = document.createElement('span');
    n.textContent = name;
    li.append(p, n);
    return li;
  }

  function renderTables() {
    const map = $('table-map');
    if (map.hidden) return;
    const shown = JSON.stringify(live.tables);
    if (map.dataset.shown === shown) return;
    map.dataset.shown = shown;
    map.replaceChildren(...live.tables.map((table) => {
      const section = document.createElement('section');
      const h = document.createElement('h3');
      h.textContent = `Стол ${table.tableNo}`;
      const ul = document.createElement('ul');
      for (const seat of table.seats) {
        const li = document.createElement('li');
        li.textContent = `${seat.seatNo}. ${seat.name}`;
        ul.append(li);
      }
      section.append(h, ul);
      return section;
    }));
  }

  function renderBefore() {
    if (card) {
      const starts = new Date(card.startsAt);
      text('starts-at', starts.toLocaleString('ru-RU', { day: 'numeric', month: 'long', hour: '2-digit', minute: '2-digit' }));
      text('registered', `Зарегистрировано ${card.registeredCount} из ${card.capacity}`);
    }
    const levels = live ? live.clock.levels : [];
    const rows = levels.map((s, i) => `${s.kind}|${i}`).join(',');
    const body = $('structure');
    if (body.dataset.shown === rows) return;
    body.dataset.shown = rows;
    let n = 0;
    body.replaceChildren(...levels.map((s) => {
      const tr = document.createElement('tr');
      const cells = s.kind === 'break'
        ? ['', 'Перерыв', '', String(s.durationMin)]
        : [String(++n), blindsOf(s), s.ante ? number(s.ante) : '', String(s.durationMin)];
      if (s.kind === 'break') tr.className = 'break';
      for (const value of cells) {
        const td = document.createElement('td');
        td.textContent = value;
        tr.append(td);
      }
      return tr;
    }));
  }

  function renderAfter() {
    const cancelled = live.status === 'cancelled';
    text('after-title', cancelled ? 'Турнир отменён' : 'Итоги');
    const winners = cancelled ? [] : live.tables.flatMap((t) => t.seats).map((s) => ({ place: 1, name: s.name }));
    const standings = cancelled ? [] : winners.concat([...live.eliminations].sort((a, b) => a.place - b.place));
    const shown = standings.map((s) => `${s.place}|${s.name}`).join('\n');
    const list = $('standings');
    if (list.dataset.shown === shown) return;
    list.dataset.shown = shown;
    list.replaceChildren(...standings.map((s) => item(s.place, s.name)));
  }

  function render() {
    if (!live) return;
    // Only a mark: the clock goes on from the last state (see `projected`).
    const stale = Date.now() - lastNews > STALE_AFTER_MS;
    $('offline').hidden = !stale;
    screen.dataset.stale = String(stale);
    screen.dataset.state = live.status;
    if (live.status === 'running') {
      show('live');
      renderLive();
    } else if (live.status === 'finished' || live.status === 'cancelled') {
      show('after');
      renderAfter();
    } else {
      show('before');
      renderBefore();
    }
  }

  function chime() {
    if (!soundOn) return;
    const audio = $('chime');
    audio.currentTime = 0;
    audio.play().catch(() => {});
  }

  function onState(state) {
    const statusChanged = !live || live.status !== state.status;
    live = state;
    if (statusChanged) loadCard();
    render();
  }

  /** Reads the live state once; false when the tournament does not exist. */
  async function read() {
    // A request stalled on a connection the Wi-Fi dropped could hold the polling round long
    // after the network is back: given up, and asked again.
    const abort = new AbortController();
    const giveUp = setTimeout(() => abort.abort(), READ_TIMEOUT_MS);
    try {
      const sent = Date.now();
      const headers = etag ? { 'If-None-Match': etag } : {};
      const response = await fetch(`${api}/live`, { headers, cache: 'no-store', signal: abort.signal });
      const received = Date.now();
      if (response.status === 304) {
        lastNews = received;
      } else if (response.ok) {
        const state = await response.json();
        etag = response.headers.get('ETag');
        // An answer held up on the way (a stalled Wi-Fi) would put the clock out by half its
        // round trip: only a quick one, or a better one than before, sets the offset.
        const roundTrip = received - sent;
        if (roundTrip <= SURE_ROUND_TRIP_MS || roundTrip < offsetRoundTrip) {
          offsetMs = Date.parse(state.serverTime) - (sent + received) / 2;
          offsetRoundTrip = roundTrip;
        }
        lastNews = received;
        onState(state);
      } else if (response.status === 404) {
        show('missing');
        text('title', 'Турнир не найден');
        return false;
      }
    } catch (_) {
      // The venue's Wi-Fi: the silence is counted by lastNews.
    } finally {
      clearTimeout(giveUp);
    }
    return true;
  }

  async function poll() {
    if (await read()) setTimeout(poll, POLL_MS);
  }

  /** The club's latest announcement, shown until five minutes after it was made. */
  async function pollAnnouncement() {
    try {
      const response = await fetch(`/screen/${encodeURIComponent(tournamentId)}/announcement`, { cache: 'no-store' });
      if (response.status === 200) {
        const said = await response.json();
        const key = `${said.createdAt}`;
        if (key !== shownAnnouncement) {
          shownAnnouncement = key;
          chime();
        }
        announcementUntil = Date.parse(said.createdAt) + ANNOUNCEMENT_SHOWN_MS - (Date.parse(said.serverTime) - Date.now());
        text('announcement', said.text);
      } else if (response.status === 204) {
        announcementUntil = 0;
      }
    } catch (_) {
      // Asked again at the next round.
    }
    $('announcement').hidden = Date.now() >= announcementUntil;
  }

  async function loadCard() {
    try {
      const response = await fetch(api, { cache: 'no-store' });
      if (!response.ok) return;
      card = await response.json();
      const texts = card.translations || {};
      const title = (texts.ru && texts.ru.title) || (texts.en && texts.en.title) || 'Турнир';
      text('title', title);
      document.title = `${title} · часы`;
      text('club', [card.organizerName, card.locationName].filter(Boolean).join(' · '));
      render();
    } catch (_) {
      // Tried again at the next round.
    }
  }

  $('sound').addEventListener('click', () => {
    soundOn = !soundOn;
    $('sound').setAttribute('aria-pressed', String(soundOn));
    $('sound').textContent = soundOn ? 'Звук: вкл' : 'Звук: выкл';
    chime(); // the click is the gesture browsers ask for before any sound
  });
  $('tables').addEventListener('click', () => {
    const map = $('table-map');
    map.hidden = !map.hidden;
    $('tables').setAttribute('aria-pressed', String(!map.hidden));
    render();
  });
  $('fullscreen').addEventListener('click', () => {
    if (document.fullscreenElement) document.exitFullscreen().catch(() => {});
    else document.documentElement.requestFullscreen().catch(() => {});
  });

  /**
   * The room's events, as the server streams them to screens: `level` (a level or a break
   * began, by a press or by the clock) rings the chime and reads the state at once;
   * `announcement` shows at once. The browser reconnects a dropped stream by itself, but
   * gives up on an answer that is not a stream (a proxy's 502 while the server restarts, a
   * 429): then a new one after a while.
   */
  function listen() {
    if (!window.EventSource) return;
    const events = new EventSource(`/screen/${encodeURIComponent(tournamentId)}/events`);
    events.addEventListener('level', (message) => {
      const level = JSON.parse(message.data);
      if (level.version <= heardLevel) return;
      heardLevel = level.version;
      screen.dataset.levelHeard = String(level.version);
      ring(level.currentLevelIdx, level.startedAt ? Date.parse(level.startedAt) : null);
      read(); // at once, beside the polling round
    });
    events.addEventListener('announcement', () => pollAnnouncement());
    events.addEventListener('error', () => {
      if (events.readyState === EventSource.CLOSED) setTimeout(listen, RELISTEN_MS);
    });
  }

  loadCard();
  poll();
  listen();
  pollAnnouncement();
  setInterval(pollAnnouncement, ANNOUNCEMENT_EVERY_MS);
  setInterval(loadCard, CARD_EVERY_MS);
  setInterval(render, RENDER_MS);
})();
