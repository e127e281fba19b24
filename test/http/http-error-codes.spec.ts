import { UnknownGatewayKeyError } from '../../src/accounts/gateway-keys';
import { UnknownGatewayTeamError } from '../../src/accounts/gateway-teams';
import { UnknownGatewayModelError } from '../../src/gateway/rate-card';
import { Logger, type ArgumentsHost } from '@nestjs/common';
import { AdmissionRefusedError } from '../../src/accounts/admission.policy';
import {
  DOMAIN_ERROR_CODES,
  IdempotencyConflictError,
  IllegalTransitionError,
  ValidationError,
  type DomainError,
} from '../../src/domain/domain.errors';
import {
  AppendOutcomeUnknownError,
  ConcurrencyError,
  DeletedStreamError,
  EventStoreUnavailableError,
} from '../../src/event-store/event-store.port';
import { InvalidFeatureInputError } from '../../src/features/operation-feature';
import { HTTP_STATUS_OF_ERROR_CODE, HttpErrorFilter, INTERNAL_ERROR_MESSAGE } from '../../src/http-kit/http-error.filter';
import {
  IdempotencyKeyReusedError,
  KeyedRequestInProgressError,
  UnknownInvocationError,
  UnknownOperationError,
  UnknownOrganizationError,
} from '../../src/invocations/invocation-errors';
import { ProjectionFaultedError, ProjectionRunnerStoppedError } from '../../src/projection-runner';
import { ReadModelsUnavailableError } from '../../src/queries/read-model-catch-up';

interface Answered {
  status?: number;
  body?: Record<string, unknown>;
}

/** Runs the filter on one error, as Nest would for a request, and returns what the client got. */
function answerTo(error: unknown): Answered {
  const answered: Answered = {};
  // The parts of a response the filter uses, which Express's and Fastify's both have.
  const response = {
    headersSent: false,
    header: () => response,
    status(status: number) {
      answered.status = status;
      return response;
    },
    send(body: string) {
      answered.body = JSON.parse(body) as Record<string, unknown>;
      return response;
    },
  };
  const request = { ledger: { requestId: 'req-1' } };
  const host = { switchToHttp: () => ({ getRequest: () => request, getResponse: () => response }) } as unknown as ArgumentsHost;
  new HttpErrorFilter().catch(error, host);
  return answered;
}

// One of every domain error the ledger throws, by the code it carries.
const DOMAIN_ERRORS: readonly DomainError[] = [
  ValidationError.of('limits.maxTurns', 'must be at most 32'),
  new InvalidFeatureInputError('input.question', 'contains no arithmetic expression'),
  new UnknownOperationError('demo.nothing'),
  new UnknownInvocationError('inv-1'),
  new UnknownOrganizationError('initech'),
  new IllegalTransitionError('Settled', 'Settle'),
  new AdmissionRefusedError({ reason: 'ai_disabled', figures: { aiEnabled: false } }),
  new IdempotencyConflictError('inv-1', 'invocation inv-1 already holds 10 credits'),
  new IdempotencyKeyReusedError('key-1', 'input'),
  new KeyedRequestInProgressError('key-1', 60_000),
  new UnknownGatewayKeyError('key-1'),
  new UnknownGatewayModelError('claude-nothing'),
  new UnknownGatewayTeamError('team-1'),
];

describe('HTTP error filter: errors are mapped by their code', () => {
  // The 500s are logged with their stack by design; that log is not what this suite checks.
  beforeAll(() => Logger.overrideLogger(false));

  it('gives every domain error code a 4xx status', () => {
    for (const code of DOMAIN_ERROR_CODES) {
      const status = HTTP_STATUS_OF_ERROR_CODE[code]?.status;
      expect([code, status !== undefined && status >= 400 && status < 500]).toEqual([code, true]);
    }
  });

  it('has one error class for every domain error code, answered with the status of its code', () => {
    expect(DOMAIN_ERRORS.map((error) => error.code).sort()).toEqual([...DOMAIN_ERROR_CODES].sort());
    for (const error of DOMAIN_ERRORS) {
      const answered = answerTo(error);
      expect([error.code, answered.status]).toEqual([error.code, HTTP_STATUS_OF_ERROR_CODE[error.code].status]);
      expect(answered.body).toMatchObject({ statusCode: answered.status, requestId: 'req-1' });
    }
  });

  it('names the bad field of a validation error and of a feature input error', () => {
    expect(answerTo(ValidationError.of('limits.maxTurns', 'must be at most 32')).body).toMatchObject({
      code: 'invalid_request',
      message: 'Invalid request: limits.maxTurns',
      fields: { 'limits.maxTurns': ['must be at most 32'] },
    });
    expect(answerTo(new InvalidFeatureInputError('input.question', 'contains no arithmetic expression')).body).toMatchObject({
      code: 'invalid_request',
      message: 'Invalid request: input.question',
      fields: { 'input.question': ['contains no arithmetic expression'] },
    });
  });

  it('answers a reused idempotency key with 422 idempotency_key_reused naming the key', () => {
    expect(answerTo(new IdempotencyKeyReusedError('key-1', 'operation'))).toMatchObject({
      status: 422,
      body: { code: 'idempotency_key_reused', fields: { idempotencyKey: ['was used for another request'] } },
    });
  });

  it('answers the store and the read side by their codes: 409 to retry, 503 when not answering', () => {
    expect(answerTo(new ConcurrencyError('account-acme', 1n, 2n))).toMatchObject({ status: 409, body: { code: 'conflict' } });
    expect(answerTo(new DeletedStreamError('account-acme', 'tombstoned'))).toMatchObject({ status: 409, body: { code: 'conflict' } });
    expect(answerTo(new EventStoreUnavailableError('read', 'down'))).toMatchObject({ status: 503, body: { code: 'unavailable' } });
    expect(answerTo(new AppendOutcomeUnknownError('account-acme', 1n, 'lost'))).toMatchObject({ status: 503 });
    expect(answerTo(new ProjectionFaultedError('balances', new Error('x')))).toMatchObject({ status: 503 });
    expect(answerTo(new ProjectionRunnerStoppedError('stop() was called'))).toMatchObject({ status: 503 });
    expect(answerTo(new ReadModelsUnavailableError('not caught up'))).toMatchObject({
      status: 503,
      body: { message: 'the read models are not available: not caught up' },
    });
  });

  it('answers an error with a code that is not the ledger’s, or no code, as a bare 500 without its details', () => {
    const nodeError = Object.assign(new Error('ENOENT: /secret/path'), { code: 'ENOENT' });
    const inherited = Object.assign(new Error('sneaky'), { code: 'toString' });
    for (const error of [nodeError, inherited, new TypeError('boom'), 'a string']) {
      const answered = answerTo(error);
      expect(answered.status).toBe(500);
      expect(answered.body).toEqual({
        statusCode: 500,
        error: 'Internal Server Error',
        code: 'internal_error',
        message: INTERNAL_ERROR_MESSAGE,
        requestId: 'req-1',
      });
    }
  });
});
