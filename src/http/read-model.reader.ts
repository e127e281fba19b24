import { Injectable } from '@nestjs/common';
import { QueryBus, type Query } from '@nestjs/cqrs';
import type { InvocationView } from '../../projections';
import { GetInvocationQuery } from '../queries/ledger.queries';
import { mayAccessOrganization, type Caller } from '../http-kit/auth/caller';
import { ResourceNotFoundException } from '../http-kit/http-error.body';

/**
 * The HTTP routes' reads, through the same QueryBus queries in-process readers use, scoped to the
 * caller's organization: another organization's invocation reads exactly like one that does not exist.
 */
@Injectable()
export class ReadModelReader {
  constructor(private readonly queries: QueryBus) {}

  /** The invocation's lifecycle view; 404 when it does not exist or belongs to another organization. */
  async invocation(caller: Caller, invocationId: string): Promise<InvocationView> {
    const view = await this.queries.execute(new GetInvocationQuery(invocationId));
    if (view === undefined || !mayAccessOrganization(caller, view.organizationId)) {
      throw new ResourceNotFoundException('invocation', invocationId);
    }
    return view;
  }

  /** A document of an invocation the caller may read (its attempts, its explanation); 404 otherwise. */
  async ofInvocation<T>(caller: Caller, invocationId: string, query: Query<T | undefined>): Promise<T> {
    await this.invocation(caller, invocationId);
    const document = await this.queries.execute(query);
    if (document === undefined) throw new ResourceNotFoundException('invocation', invocationId);
    return document;
  }

  /** A query's document, or undefined. */
  find<T>(query: Query<T | undefined>): Promise<T | undefined> {
    return this.queries.execute(query);
  }
}
