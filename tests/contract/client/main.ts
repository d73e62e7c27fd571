// A player's first minutes in the app, through the typed client: sign in with a code, read the
// agenda, register for a tournament in it, see the agenda mark it as theirs, and be refused a
// second registration with the contract's code. Run by tests/api/typescript_client.rs:
//
//   FLOOR_API=http://127.0.0.1:8080/api/v1 FLOOR_PHONE=+79990000001 FLOOR_TOURNAMENT=<id> \
//     node tests/contract/client/out/main.js
//
// It prints one JSON line when the code is requested, reads the code as a line of standard
// input, and prints one JSON line of what it saw at the end. Any surprise exits 1.

import { createInterface } from "node:readline/promises";

import { Floor, FloorError, type RegistrationStatus } from "./floor.js";

function setting(name: string): string {
  const value = process.env[name];
  if (value === undefined || value === "") {
    throw new Error(`${name} is not set`);
  }
  return value;
}

async function main(): Promise<void> {
  const floor = new Floor(setting("FLOOR_API"));
  const phone = setting("FLOOR_PHONE");
  const tournamentId = setting("FLOOR_TOURNAMENT");

  const requested = await floor.requestCode(phone);
  console.log(JSON.stringify({ codeRequested: { channel: requested.channel, expiresInSec: requested.expiresInSec } }));
  const input = createInterface({ input: process.stdin });
  const code = (await input.question("")).trim();
  input.close();
  const session = await floor.verify(phone, code);

  const agenda = await floor.agenda();
  const card = agenda.find((tournament) => tournament.id === tournamentId);
  if (card === undefined) {
    throw new Error(`tournament ${tournamentId} is not in the agenda of ${agenda.length}`);
  }
  const registration = await floor.register(card.id);
  const mine: RegistrationStatus | null | undefined = (await floor.agenda()).find((t) => t.id === card.id)?.myStatus;

  let again: string;
  try {
    await floor.register(card.id);
    again = "accepted";
  } catch (refusal) {
    if (!(refusal instanceof FloorError)) {
      throw refusal;
    }
    again = refusal.code;
  }

  console.log(
    JSON.stringify({
      userId: session.user.id,
      isNewUser: session.isNewUser,
      agenda: agenda.length,
      title: card.translations.ru?.title ?? card.translations.en?.title ?? null,
      registration: { id: registration.id, status: registration.status, tournamentId: registration.tournamentId },
      myStatus: mine ?? null,
      registerAgain: again,
    }),
  );
}

main().catch((failure: unknown) => {
  console.error(failure instanceof Error ? failure.message : failure);
  process.exit(1);
});
