// The generated types are strict enough to catch an app's mistakes: each line below is one, and
// `tsc` fails on an `@ts-expect-error` that meets no error. Were the contract loose (a body or
// an answer of `any`, a status or a code as a plain string, a path id optional), the build of
// the client would fail here. Compiled with the client, never run.

import createClient from "openapi-fetch";

import type { ErrorCode, Registration, RegistrationStatus } from "./floor.js";
import type { paths } from "./floor-api.js";

export async function mistakes(api: ReturnType<typeof createClient<paths>>, registration: Registration): Promise<void> {
  // @ts-expect-error a registration's status is one of the contract's names
  const status: RegistrationStatus = "pending";
  // @ts-expect-error an error code is one of the contract's codes
  const code: ErrorCode = "SOMETHING_WRONG";
  // @ts-expect-error a registration has no such field
  const seat: number = registration.seatNumber;
  // @ts-expect-error a registration's id is a string (a UUID), not a number
  const id: number = registration.id;

  // @ts-expect-error the path names no operation of the contract
  await api.GET("/tournaments/{id}/nowhere", { params: { path: { id: "x" } } });
  // @ts-expect-error registering names the tournament in the path
  await api.POST("/tournaments/{id}/register", {});
  // @ts-expect-error a code request carries the phone
  await api.POST("/auth/otp/request", { body: {} });
  // @ts-expect-error the agenda's status filter takes a tournament status only
  await api.GET("/tournaments", { params: { query: { status: "open" } } });

  const { data } = await api.GET("/tournaments");
  // @ts-expect-error the agenda is a list in `items`, not an array
  data?.map((card: unknown) => card);
  void [status, code, seat, id];
}
