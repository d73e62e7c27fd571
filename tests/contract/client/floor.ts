// A small typed client of Floor's HTTP API, as an app would write it: every path, parameter,
// body and answer is typed by `floor-api.d.ts`, which openapi-typescript generates from
// openapi.yaml (never edited by hand, never committed). It compiles only while the contract
// holds what it uses; `strictness.ts` checks that the generated types are strict at all.

import createClient, { type Middleware } from "openapi-fetch";

import type { components, paths } from "./floor-api.js";

export type Schemas = components["schemas"];
export type AgendaCard = Schemas["AgendaCard"];
export type Registration = Schemas["RegistrationView"];
export type RegistrationStatus = Schemas["RegistrationStatus"];
export type ErrorCode = Schemas["ErrorCode"];
export type SignIn = Schemas["SignInResponse"];

/** A refusal of the server, with the contract's status and code. */
export class FloorError extends Error {
  constructor(
    readonly status: number,
    readonly code: ErrorCode,
    message: string,
  ) {
    super(`${status} ${code}: ${message}`);
  }
}

/** What every call answers: the data of a success, or the `ErrorBody` of a refusal. */
type Answer<T> = { data?: T; error?: Schemas["ErrorBody"]; response: Response };

/** The data of a success; a refusal becomes a `FloorError` carrying the contract's code. */
function ok<T>({ data, error, response }: Answer<T>): T {
  if (error !== undefined) {
    throw new FloorError(response.status, error.error.code, error.error.message);
  }
  if (data === undefined) {
    throw new Error(`${response.status} without a body from ${response.url}`);
  }
  return data;
}

export class Floor {
  private readonly api;
  private accessToken: string | undefined;

  /** `apiRoot`: the server's origin with the contract's server path, `…/api/v1`. */
  constructor(apiRoot: string) {
    this.api = createClient<paths>({ baseUrl: apiRoot });
    const bearer: Middleware = {
      onRequest: ({ request }) => {
        if (this.accessToken !== undefined) {
          request.headers.set("Authorization", `Bearer ${this.accessToken}`);
        }
        return request;
      },
    };
    this.api.use(bearer);
  }

  /** Asks for a sign-in code by SMS (or the channel the server names). */
  async requestCode(phone: string): Promise<Schemas["CodeRequested"]> {
    return ok(await this.api.POST("/auth/otp/request", { body: { phone } }));
  }

  /** Trades the code for a session; later calls carry its access token. */
  async verify(phone: string, code: string): Promise<SignIn> {
    const session = ok(await this.api.POST("/auth/otp/verify", { body: { phone, code } }));
    this.accessToken = session.accessToken;
    return session;
  }

  /** The agenda: tournaments open for registration or running, by start. */
  async agenda(city?: string): Promise<AgendaCard[]> {
    const query = city === undefined ? {} : { city };
    return ok(await this.api.GET("/tournaments", { params: { query } })).items;
  }

  /** Registers the signed-in player: a seat while one is free, else the waitlist. */
  async register(tournamentId: string): Promise<Registration> {
    return ok(await this.api.POST("/tournaments/{id}/register", { params: { path: { id: tournamentId } } }));
  }
}
