// The venue screen: the tournament's public live state, polled every second with its ETag
// (an unchanged state costs a 304), and its clock counted down here from levelStartedAt,
// pausedAt and the server's time. After 10 s without an answer the screen says "нет связи"
// and stops showing a running clock, since it may be stale; it keeps asking by itself. The
// room's events come as Server-Sent Events: the chime plays on `level`, an `announcement`
// shows at once; the latest announcement is also asked for every 3 s.
(() => {
  'use strict';

  const POLL_MS = 1000;
  const STALE_AFTER_MS = 10000;
  const CARD_EVERY_MS = 60000;
  const RENDER_MS = 250;
  const ANNOUNCEMENT_EVERY_MS = 3000;
  const ANNOUNCEMENT_SHOWN_MS = 5 * 60000;

  const tournamentId = decodeURIComponent(location.pathname.split('/').filter(Boolean)[1] || '');
  const api = `/api/v1/tournaments/${encodeURIComponent(tournamentId)}`;
  const $ = (id) => document.getElementById(id);
  const screen = $('screen');

  let live = null;
  let card = null;
  let etag = null;
  let offsetMs = 0;
  let lastNews = 0;
  let soundOn = false;
  let heardLevel = 0;
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

  /** Milliseconds left in the running segment (frozen while paused). */
  function leftInSegment(clock) {
    const segment = clock.levels[clock.currentLevelIdx];
    if (!segment || !clock.levelStartedAt) return 0;
    const at = clock.pausedAt ? Date.parse(clock.pausedAt) : serverNow();
    return Date.parse(clock.levelStartedAt) + segment.durationMin * 60000 - at;
  }

  function renderLive(stale) {
    const clock = live.clock;
    const levels = clock.levels;
    const idx = clock.currentLevelIdx;
    const segment = levels[idx] || {};
    const isBreak = segment.kind === 'break';
    const paused = Boolean(clock.pausedAt);
    screen.dataset.break = String(isBreak);
    screen.dataset.paused = String(paused);
    text('segment', segmentName(levels, idx) + (paused ? ' · пауза' : ''));
    text('timer', stale ? '--:--' : duration(leftInSegment(clock)));
    text('blinds', isBreak ? 'Перерыв' : blindsOf(segment));
    text('ante', !isBreak && segment.ante ? `Анте ${number(segment.ante)}` : '');
    text('note', segment.note || '');

    const next = levels[idx + 1];
    text('next', !next ? '—' : next.kind === 'break' ? `Перерыв ${next.durationMin} мин` : blindsOf(next));
    let toBreak = null;
    if (!isBreak) {
      let ms = leftInSegment(clock);
      for (const later of levels.slice(idx + 1)) {
        if (later.kind === 'break') { toBreak = ms; break; }
        ms += later.durationMin * 60000;
      }
    }
    text('to-break', toBreak === null || stale ? '—' : duration(toBreak));
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
    const stale = Date.now() - lastNews > STALE_AFTER_MS;
    $('offline').hidden = !stale;
    screen.dataset.stale = String(stale);
    screen.dataset.state = live.status;
    if (live.status === 'running') {
      show('live');
      renderLive(stale);
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
    try {
      const sent = Date.now();
      const response = await fetch(`${api}/live`, { headers: etag ? { 'If-None-Match': etag } : {}, cache: 'no-store' });
      const received = Date.now();
      if (response.status === 304) {
        lastNews = received;
      } else if (response.ok) {
        const state = await response.json();
        etag = response.headers.get('ETag');
        offsetMs = Date.parse(state.serverTime) - (sent + received) / 2;
        lastNews = received;
        onState(state);
      } else if (response.status === 404) {
        show('missing');
        text('title', 'Турнир не найден');
        return false;
      }
    } catch (_) {
      // The venue's Wi-Fi: the silence is counted by lastNews.
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
   * began, by a press or by the clock) rings the chime once per version and reads the state at
   * once; `announcement` shows at once. The browser reconnects the stream by itself.
   */
  function listen() {
    if (!window.EventSource) return;
    const events = new EventSource(`/screen/${encodeURIComponent(tournamentId)}/events`);
    events.addEventListener('level', (message) => {
      const level = JSON.parse(message.data);
      if (level.version <= heardLevel) return;
      heardLevel = level.version;
      screen.dataset.levelHeard = String(level.version);
      chime();
      read(); // at once, beside the polling round
    });
    events.addEventListener('announcement', () => pollAnnouncement());
  }

  loadCard();
  poll();
  listen();
  pollAnnouncement();
  setInterval(pollAnnouncement, ANNOUNCEMENT_EVERY_MS);
  setInterval(loadCard, CARD_EVERY_MS);
  setInterval(render, RENDER_MS);
})();
